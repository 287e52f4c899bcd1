//! `allocasm verify-extractor`: the built-in extractor against
//! cargo-show-asm, probe by probe, profile by profile.
//!
//! cargo-show-asm always builds with `-C debuginfo=2 -C codegen-units=1`
//! ([`cargo_show_asm::FORCED_FLAGS`]), so the built-in extractor is run on a build
//! with the same flags: any difference left is an extraction or
//! normalization difference. Where the default build (the release profile's
//! codegen units) differs from that build, the cause is checked, not guessed:
//! the built-in extractor also builds with each forced flag alone, and a
//! listing's difference is put down to the flag that alone reproduces it.

use allocasm_suite::codegen::Profile;
use allocasm_suite::codegen::project::probes;
use clap::Args;
use similar::TextDiff;

use super::session::{self, Built};
use super::{Backend, BuildArgs, CliError, Status, Ui, cargo_show_asm};

/// `verify-extractor` arguments.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Build options (--backend is ignored: both are run)
    #[command(flatten)]
    pub build: BuildArgs,
}

fn instructions(b: &Built, probe: &str) -> Option<String> {
    b.listings.listing(probe).map(|l| l.text())
}

/// Runs both backends and compares; exit 1 on any disagreement.
pub fn run(ui: &Ui, args: &VerifyArgs) -> Result<Status, CliError> {
    let profiles = args.build.target.profiles(ui)?;
    let opts = args.build.options();
    // The built-in extractor on a build with cargo-show-asm's flags, in its
    // own target dirs.
    let with_flags = |flags: &[&str], dir: &str| {
        let profiles: Vec<Profile> = profiles
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.rustflags.extend(flags.iter().map(|s| s.to_string()));
                p
            })
            .collect();
        let mut o = opts.clone();
        o.target_root = opts.target_root.join(dir);
        (profiles, o)
    };
    let (same_flags, same_opts) = with_flags(cargo_show_asm::FORCED_FLAGS, "cargo-show-asm-flags");
    ui.note("building with the built-in extractor (default flags, and cargo-show-asm's flags)");
    let default = session::build_one(ui, &profiles, opts.clone(), Backend::Builtin, false)?;
    let builtin = session::build_one(ui, &same_flags, same_opts, Backend::Builtin, false)?;
    // Each forced flag alone, to attribute a default-vs-forced difference.
    let single: Vec<(String, session::Builds)> = cargo_show_asm::FORCED_FLAGS
        .chunks(2)
        .map(|flag| {
            let (p, o) = with_flags(flag, &format!("only-{}", flag[1].replace('=', "-")));
            session::build_one(ui, &p, o, Backend::Builtin, false).map(|b| (flag.join(" "), b))
        })
        .collect::<Result<_, _>>()?;
    ui.note("extracting through `cargo asm`, one run per probe per profile");
    let cargo_asm = session::build_one(ui, &profiles, opts, Backend::CargoShowAsm, false)?;
    outln!(
        "{}",
        ui.bold(&format!(
            "built-in extractor vs cargo-show-asm ({}), both with {}",
            builtin.toolchain,
            cargo_show_asm::FORCED_FLAGS.join(" ")
        ))
    );
    let (mut same, mut different, mut missing, mut cgu_effect) = (0, 0, 0, 0);
    for profile in &profiles {
        let (Some(a), Some(b)) = (builtin.get(&profile.name), cargo_asm.get(&profile.name)) else {
            continue;
        };
        let d = default.get(&profile.name);
        outln!("\n{}", ui.bold(&profile.name));
        for probe in probes() {
            let (la, lb) = (instructions(a, probe.name), instructions(b, probe.name));
            let default_text = d.and_then(|d| instructions(d, probe.name));
            let cgu_note = match (&default_text, &la) {
                (Some(x), Some(y)) if x != y => {
                    cgu_effect += 1;
                    // The flags that alone change the default listing.
                    let causes: Vec<&str> = single
                        .iter()
                        .filter(|(_, b)| {
                            b.get(&profile.name)
                                .and_then(|b| instructions(b, probe.name))
                                .is_some_and(|t| &t != x)
                        })
                        .map(|(flag, _)| flag.as_str())
                        .collect();
                    let why = if causes.is_empty() {
                        "neither flag alone changes it, the two together do".to_string()
                    } else {
                        format!("{} alone changes it", causes.join(", and "))
                    };
                    ui.dim(&format!("  (the default build differs: {why})"))
                }
                _ => String::new(),
            };
            match (la, lb) {
                (Some(x), Some(y)) if x == y => {
                    same += 1;
                    let n = a
                        .listings
                        .listing(probe.name)
                        .map_or(0, |l| l.instructions().count());
                    outln!(
                        "  {} {:32} {n} instructions{cgu_note}",
                        ui.green("same     "),
                        probe.name
                    );
                }
                (Some(x), Some(y)) => {
                    different += 1;
                    outln!("  {} {}", ui.red("DIFFERENT"), probe.name);
                    let diff = TextDiff::from_lines(&x, &y);
                    let text = diff
                        .unified_diff()
                        .context_radius(2)
                        .header("built-in", "cargo-show-asm")
                        .to_string();
                    for l in text.lines() {
                        outln!("      {l}");
                    }
                }
                (None, None) => {
                    missing += 1;
                    outln!(
                        "  {} {:32} missing under both",
                        ui.yellow("missing  "),
                        probe.name
                    );
                }
                (x, _) => {
                    different += 1;
                    outln!(
                        "  {} {} found only by {}",
                        ui.red("DIFFERENT"),
                        probe.name,
                        if x.is_some() {
                            "the built-in extractor"
                        } else {
                            "cargo-show-asm"
                        }
                    );
                }
            }
        }
    }
    default.report_failures(ui);
    builtin.report_failures(ui);
    cargo_asm.report_failures(ui);
    let summary = format!(
        "{same} same, {different} different, {missing} missing under both; {cgu_effect} listing(s) of the default build differ from the build with cargo-show-asm's flags (cause above)"
    );
    outln!(
        "\n{}",
        if different == 0 {
            ui.green(&summary)
        } else {
            ui.red(&summary)
        }
    );
    if !builtin.failed.is_empty() || !cargo_asm.failed.is_empty() {
        return Err(CliError::environment("some builds failed (above)"));
    }
    Ok(if different == 0 {
        Status::Ok
    } else {
        Status::Failed
    })
}
