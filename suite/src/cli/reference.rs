//! `allocasm help-markdown`: the command reference (docs/cli.md), generated from
//! the `--help` of every command. `tests/all/cli.rs` rebuilds it from the
//! built binary's `--help` and fails when docs/cli.md differs, so the two
//! cannot drift; `allocasm help-markdown --update docs/cli.md` rewrites it.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser};

use super::{Cli, CliError, Status};

/// The markers around the generated section in docs/cli.md.
pub const START: &str = "<!-- cli-reference:start -->";
/// See [`START`].
pub const END: &str = "<!-- cli-reference:end -->";

/// `help-markdown` arguments.
#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// Rewrite the section between the cli-reference markers of this file instead of printing
    #[arg(long, value_name = "FILE")]
    pub update: Option<PathBuf>,
}

/// The `--help` text of `allocasm [sub] --help`, exactly as printed.
fn help(sub: Option<&str>) -> String {
    let mut argv = vec!["allocasm"];
    argv.extend(sub);
    argv.push("--help");
    match Cli::try_parse_from(argv) {
        Ok(_) => String::new(),
        Err(e) => e.render().to_string(),
    }
}

/// The visible subcommands, in `--help` order.
pub fn subcommands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The section between the markers (without them).
pub fn markdown() -> String {
    let mut s = String::from(INTRO);
    let mut block = |title: String, text: String| {
        s.push_str(&format!(
            "\n### `{title}`\n\n```text\n{}\n```\n",
            tidy(&text)
        ));
    };
    block("allocasm --help".into(), help(None));
    for sub in subcommands() {
        block(format!("allocasm {sub} --help"), help(Some(&sub)));
    }
    s
}

/// Help text as it goes into docs/cli.md: trailing spaces trimmed (so an
/// editor that strips them keeps the section equal), no final newline.
pub fn tidy(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

const INTRO: &str = "\
## Command reference

`cargo run --release -- <command>` runs the CLI here; `cargo install --locked --path suite` puts
`allocasm` on the `PATH`, and the installed binary works on the Cargo workspace of the directory
it runs in (or `--manifest-path`), any crate with an `allocasm.toml` (docs/any-crate.md).
Examples:

```sh
cargo run --release -- report                       # reports/report.{md,json,html}, every profile
cargo run --release -- show linear_alloc --side-by-side
cargo run --release -- show thread_cursor_alloc -p x86_64-linux --linked   # .s, then linked
cargo run --release -- check -p x86_64-linux,aarch64-linux-lse
cargo run --release -- diff --from 1.99.1 --to nightly --summary
cargo run --release -- verify-extractor             # needs `cargo install cargo-show-asm`
```

`report` installs missing rustup targets itself (it prints each `rustup target add` it runs;
`--no-install` turns that off); the other commands stop with the `rustup target add` line to run,
or do it with `--install`. Builds live in `target/allocasm-asm/<toolchain>/<profile>/`; a second
run reuses them (about a second). `report` (unless `--no-linked`) and `show --linked` also link
`suite/probe-bins/linked_probes.rs` for each profile with a `[linked]` table, with the release profile and
with fat LTO (in `<profile>-linked/` and `<profile>-linked-lto/`, warm the same way), and
disassemble it with the toolchain's `llvm-objdump` (`rustup component add llvm-tools`; GNU
`<triple>-objdump` is the fallback): the listing next to what the linker made of it. A missing disassembler or a failed linked build is shown in
place of that listing, with the fix; `report` warns about it and still exits 0 (the `.s` report
is its job), `show --linked` exits 3. `report` (unless `--no-executed`) then measures what the
CPU executes on the Linux profiles: it builds `suite/probe-bins/probe_driver.rs` in the linked view's
`<profile>-linked/` (reusing that build; for `x86_64-linux-dylib` also the probes' cdylib
`suite/dylib-probes`, which the driver dlopens), runs it once per profile under
`qemu-<arch> -singlestep -d exec,nochain`, and puts each probe's executed instructions per call
(helpers such as `__aarch64_ldadd8_relax` counted apart) and llvm-mca's cycles per CPU for its
hot path beside the hot path's count, with a cross-profile table of the three; without qemu-user
or llvm-mca the report says so per profile and still exits 0; `allocasm doctor` lists every
outside tool, found or missing, with the command that installs it on this OS.
The executed counts, llvm-mca's predictions and the disassemblies are cached in
`target/allocasm-asm/cache/`, keyed by the binaries' bytes and the tools' `--version`: a warm
report with nothing changed runs none of them again (`--no-cache` measures again). Nor does it
run cargo: after each build a stamp in its target dir lists every file the build read (from the
dep-info files cargo and rustc write, the manifests, the lock file and cargo's configuration)
with its time and length, beside the command, the environment and `rustc -vV`; while all of it
holds, the next run takes cargo's messages from the stamp (`ALLOCASM_NO_FRESH=1` runs cargo
anyway). A warm full report takes under a second here.
Everything below is `--help`, generated by
`cargo run -- help-markdown --update docs/cli.md`; `cargo test` fails when it and `--help` differ.
";

/// Prints the section, or writes it into a file between the markers.
pub fn run(args: &ReferenceArgs) -> Result<Status, CliError> {
    let section = markdown();
    let Some(path) = &args.update else {
        out!("{section}");
        return Ok(Status::Ok);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::environment(format!("cannot read {}: {e}", path.display())))?;
    let (Some(a), Some(b)) = (text.find(START), text.find(END)) else {
        return Err(CliError::usage(format!(
            "{} has no `{START}` … `{END}` markers",
            path.display()
        )));
    };
    let updated = format!(
        "{}{START}\n{section}{END}{}",
        &text[..a],
        &text[b + END.len()..]
    );
    std::fs::write(path, updated)
        .map_err(|e| CliError::environment(format!("cannot write {}: {e}", path.display())))?;
    Ok(Status::Ok)
}
