//! The `allocasm` command (placeholder until the CLI lands).
fn main() {
    println!("allocasm: see README.md");
}
