/* Which object, if any, a C program's lookups of the unwinder's entry
 * points find. Under LD_PRELOAD the library is searched first, so an
 * unwinder symbol it exported would replace the program's own (a C++
 * program's exceptions would run through the library's copy). Prints one
 * line a symbol: its name and the object that defines it, or "none". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
    const char *names[] = {"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_Backtrace",
                           "_Unwind_GetIP", "__gcc_personality_v0", "__register_frame_info",
                           "__deregister_frame_info", "__emutls_get_address", "malloc"};
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        void *p = dlsym(RTLD_DEFAULT, names[i]);
        Dl_info info;
        if (p && dladdr(p, &info) && info.dli_fname)
            printf("%s %s\n", names[i], info.dli_fname);
        else
            printf("%s none\n", names[i]);
    }
    return 0;
}
