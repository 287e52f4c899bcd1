//! `allocasm help-markdown`: the README's command reference, generated from
//! the `--help` of every command. `tests/all/cli.rs` rebuilds it from the
//! built binary's `--help` and fails when README.md differs, so the two
//! cannot drift; `allocasm help-markdown --update README.md` rewrites it.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser};

use super::{Cli, CliError, Status};

/// The markers around the generated section in README.md.
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
    let mut s = String::from(
        "## Command reference\n\n\
         Generated from `--help` by `cargo run -- help-markdown --update README.md`; \
         `cargo test` fails when this section and `--help` differ.\n",
    );
    let mut block = |title: String, text: String| {
        s.push_str(&format!(
            "\n### `{title}`\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
    };
    block("allocasm --help".into(), help(None));
    for sub in subcommands() {
        block(format!("allocasm {sub} --help"), help(Some(&sub)));
    }
    s
}

/// Prints the section, or writes it into a file between the markers.
pub fn run(args: &ReferenceArgs) -> Result<Status, CliError> {
    let section = markdown();
    let Some(path) = &args.update else {
        print!("{section}");
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
