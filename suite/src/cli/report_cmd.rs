//! `allocasm report`: the asm report of every probe on every profile, in
//! every format asked, written to one directory.

use std::path::PathBuf;

use allocasm_suite::codegen::project::{self, probes};
use allocasm_suite::codegen::{linked, objdump};
use clap::Args;

use crate::report::{self, BuiltProfile, Compiler, LinkedBuild, Report};

use super::measure;
use super::session::{self, build_error_message, linked_error_message};
use super::{BuildArgs, CliError, Status, Ui};

/// `report` arguments.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Directory to write report.md, report.json, report.html (and report.txt) to
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub out: PathBuf,
    /// Output formats, comma-separated: md, json, html, text
    #[arg(
        long,
        value_name = "FORMATS",
        value_delimiter = ',',
        default_value = "md,json,html",
        value_parser = ["md", "json", "html", "text"]
    )]
    pub format: Vec<String>,
    /// Do not install missing rustup targets (fail with the `rustup target add` line instead)
    #[arg(long, conflicts_with = "install")]
    pub no_install: bool,
    /// Leave out the linked view (each probe disassembled from an executable linked with the
    /// release profile and with fat LTO, for the profiles with a [linked] table)
    #[arg(long)]
    pub no_linked: bool,
    /// Leave out what the CPU executes: the instructions each probe executes per call under
    /// qemu-user (Linux profiles) and llvm-mca's cycles per CPU for its hot path
    #[arg(long)]
    pub no_executed: bool,
    /// Measure the executed counts and llvm-mca's predictions again instead of reading them
    /// from the cache (target/allocasm-asm/cache/, keyed by the driver's bytes and the tools'
    /// versions, so a rebuilt driver or another qemu or llvm-mca is measured anyway)
    #[arg(long)]
    pub no_cache: bool,
    /// Build options
    #[command(flatten)]
    pub build: BuildArgs,
}

/// Builds, evaluates and writes the report; exit 3 when a profile failed to
/// build (the report is still written, showing why in place of the listing).
/// A linked view that could not be built (no cross linker or disassembler on
/// this machine, or a failed link) is shown with its reason and the fix, and
/// only warned about: the `.s` report is the command's job, the linked view
/// a supplement (`allocasm show --linked` and the test suite treat it as an
/// error).
pub fn run(ui: &Ui, args: &ReportArgs) -> Result<Status, CliError> {
    let profiles = args.build.target.profiles(ui)?;
    // The README's main command must work on a fresh machine where
    // RUSTUP_AUTO_INSTALL=0: `report` installs missing targets itself.
    let install = !args.no_install;
    if args.no_cache {
        allocasm_suite::codegen::cache::measure_again();
    }
    // Linked views and executed counts come from allocasm's own examples
    // (`linked_probes`, `probe_driver`); another project's report has the
    // listings, their hot paths and llvm-mca's predictions.
    let with_linked = !args.no_linked && project::current().is_allocasm();
    // The linked views' disassembler is the toolchain's llvm-objdump: a
    // fresh machine's minimal toolchain lacks it, and `report` adds it as it
    // adds targets (else GNU objdump stands in, with a note).
    if install && with_linked && !allocasm_suite::tools::toolchain_llvm_objdump() {
        let toolchain = args.build.toolchain.clone().map_or_else(
            || allocasm_suite::toolchain::resolve_toolchain(&Default::default()),
            Ok,
        );
        let added = toolchain.and_then(|tc| {
            allocasm_suite::toolchain::add_component(&tc, "llvm-tools", &|line| {
                errln!("report: running `{line}`")
            })
        });
        if let Err(e) = added {
            errln!("{} {e}", ui.yellow("warning:"));
        }
    }
    let opts = session::build_options(
        args.build.toolchain.clone(),
        args.build.target.target_root.as_ref(),
        install,
    );
    let builds = session::build_one(ui, &profiles, opts.clone(), args.build.backend, with_linked)?;
    let rustc_vv = match builds.rustc_version() {
        Some(v) => v.to_string(),
        None => allocasm_suite::codegen::build::rustc_version(&builds.toolchain)
            .unwrap_or_else(|e| format!("(rustc -vV failed: {e})")),
    };
    let order: Vec<&allocasm_suite::codegen::Profile> = profiles.iter().collect();
    let built: Vec<BuiltProfile<'_>> = builds
        .built
        .iter()
        .map(|b| BuiltProfile {
            profile: &b.profile,
            output: &b.output,
            listings: &b.listings,
        })
        .collect();
    let failed: Vec<(&allocasm_suite::codegen::Profile, String)> = builds
        .failed
        .iter()
        .chain(&builds.unavailable)
        .map(|(p, e)| (p, build_error_message(e)))
        .collect();
    let linked: Vec<LinkedBuild<'_>> = builds
        .linked
        .iter()
        .map(|l| LinkedBuild {
            profile: &l.profile,
            lto: l.lto,
            outcome: match &l.result {
                Ok((output, listings)) => Ok((output, listings)),
                Err(e) => Err(linked_error_message(&l.profile, l.lto, e)),
            },
        })
        .collect();
    let mut report = Report::new(
        Compiler::from_rustc_vv(&builds.toolchain, &rustc_vv),
        args.build.backend.name(),
        &order,
        &built,
        &failed,
        probes(),
        with_linked.then_some(linked.as_slice()),
    );
    let measurements = (!args.no_executed).then(|| {
        let targets: Vec<measure::Target<'_>> = order
            .iter()
            .map(|p| measure::Target {
                profile: p,
                listings: builds.get(&p.name).map(|b| &b.listings),
            })
            .collect();
        measure::measure_all(ui, &targets, &opts)
    });
    report.attach_measurements(
        measurements.as_deref(),
        allocasm_suite::codegen::mca::llvm_mca(),
    );
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::environment(format!("cannot create {}: {e}", args.out.display())))?;
    for name in &args.format {
        let format = report::format(name).expect("clap checked the format name");
        let path = args.out.join(format.file_name);
        std::fs::write(&path, (format.render)(&report))
            .map_err(|e| CliError::environment(format!("cannot write {}: {e}", path.display())))?;
        if !ui.quiet {
            outln!("wrote {} ({})", path.display(), format.name);
        }
    }
    builds.report_failures(ui);
    if let Some(section) = &report.executed
        && !ui.quiet
        && !args.no_executed
    {
        // What could be measured here and was not (a missing qemu-user or
        // llvm-mca, a failed driver build); "not measured (...)" is by design.
        for p in &section.profiles {
            for why in [&p.reason, &p.mca_reason].into_iter().flatten() {
                if why.starts_with("not measured:") || why.starts_with("not predicted:") {
                    errln!("{} {}: {why}", ui.yellow("note:"), p.profile);
                }
            }
        }
    }
    // GNU objdump made the linked views where llvm-tools is missing: the
    // same code, spelled otherwise than the snapshots.
    if !ui.quiet
        && let Some(out) = builds.linked.iter().find_map(|l| {
            l.result.as_ref().ok().map(|(o, _)| o).filter(|o| {
                !objdump::is_llvm_objdump(o.dump.command.split(' ').next().unwrap_or(""))
            })
        })
    {
        errln!(
            "{} the linked views were disassembled by `{}`, not the toolchain's llvm-objdump \
             (the snapshots' spelling): `{}`",
            ui.yellow("note:"),
            out.dump.command.split(' ').next().unwrap_or(""),
            allocasm_suite::tools::Tool::LlvmObjdump.install()
        );
    }
    let linked_failed = builds.linked_failures().count();
    if linked_failed > 0 {
        let mut wanting: Vec<&allocasm_suite::codegen::Profile> = builds
            .linked
            .iter()
            .filter(|l| l.result.as_ref().is_err_and(linked::missing_tools))
            .map(|l| &l.profile)
            .collect();
        wanting.sort_by(|a, b| a.name.cmp(&b.name));
        wanting.dedup_by(|a, b| a.name == b.name);
        let fix = if wanting.is_empty() {
            String::new()
        } else {
            let names: Vec<&str> = wanting.iter().map(|p| p.name.as_str()).collect();
            format!(
                "\n  the linked views of {} need the cross linkers and disassemblers: install \
                 them with `{}`{}, then run `allocasm report` again",
                names.join(", "),
                linked::install_command(&wanting),
                allocasm_suite::tools::or_setup()
            )
        };
        errln!(
            "{} {linked_failed} linked build(s) failed; the report shows why in place of their \
             listings{fix}",
            ui.yellow("warning:")
        );
    }
    // The summary comes last, after the notes, where a log's reader looks.
    let t = report.totals;
    let line = format!(
        "{} probes × {} profiles with {} ({}): {} listings, {} missing, {} of {} expectations failed",
        t.probes,
        t.profiles,
        report.compiler.release,
        report.backend,
        t.found,
        t.missing,
        t.failures,
        t.expectations
    );
    if !ui.quiet {
        outln!(
            "{}",
            if t.failures == 0 {
                ui.green(&line)
            } else {
                ui.yellow(&line)
            }
        );
        if t.failures > 0 {
            outln!(
                "  (`allocasm check` lists each failure; `report` itself exits 0 unless a build failed)"
            );
        }
    }
    if !builds.failed.is_empty() {
        return Err(CliError::environment(format!(
            "{} profile build(s) failed; the report shows why in place of their listings",
            builds.failed.len()
        )));
    }
    Ok(Status::Ok)
}
