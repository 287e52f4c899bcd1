//! A small on-disk cache of measurements that cost seconds to take and
//! depend only on a few inputs: the executed counts (a probe driver run under
//! qemu) and llvm-mca's predictions of a hot path. A warm report with
//! nothing changed reads them back instead of running qemu and llvm-mca
//! again.
//!
//! Each entry is one JSON file under `<target root>/cache/<kind>/`, named by
//! the SHA-256 of its key; the file also holds the key itself, and a read
//! counts as a hit only when that matches exactly. The key is every input
//! the value depends on: for executed counts the driver's (and probe
//! library's) bytes, the qemu binary and its `--version`, the options and
//! the probe list; for llvm-mca the hot path's text, llvm-mca's `--version`,
//! the CPU model and the triple. A rebuilt driver, another qemu or another
//! llvm-mca is a new key, so a stale value is never read. Writes go through
//! a temporary file and a rename; an unreadable or corrupt file is a miss
//! and is rewritten. `ALLOCASM_NO_CACHE=1` (the CLI's `--no-cache`) skips
//! reading, so everything is measured again and the entries rewritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

/// Bumped when a cached value's meaning changes.
const FORMAT: &str = "allocasm-cache-1";

/// Set by [`measure_again`].
static NO_READ: AtomicBool = AtomicBool::new(false);

/// Makes every cache of this process skip reading: everything is measured
/// again and the entries rewritten (the CLI's `--no-cache`).
pub fn measure_again() {
    NO_READ.store(true, Ordering::Relaxed);
}

/// The key of an entry: its parts, each length-prefixed so that no two
/// different lists of parts hash alike.
#[derive(Debug, Clone, Default)]
pub struct Key {
    hasher: Sha256,
    text: String,
}

impl Key {
    /// A key for `kind` (`executed`, `mca`).
    pub fn new(kind: &str) -> Key {
        let mut k = Key::default();
        k.part(FORMAT.as_bytes()).part(kind.as_bytes());
        k
    }

    /// Adds a part.
    pub fn part(&mut self, bytes: &[u8]) -> &mut Key {
        self.hasher.update((bytes.len() as u64).to_le_bytes());
        self.hasher.update(bytes);
        self
    }

    /// Adds a part given as text (also kept readable in the entry).
    pub fn text(&mut self, s: &str) -> &mut Key {
        self.part(s.as_bytes());
        self.text.push_str(s);
        self.text.push('\n');
        self
    }

    /// Adds a file's contents; `Err` when it cannot be read.
    pub fn file(&mut self, path: &Path) -> std::io::Result<&mut Key> {
        let bytes = std::fs::read(path)?;
        self.text(&path.display().to_string());
        Ok(self.part(&Sha256::digest(&bytes)))
    }

    /// The hex digest.
    pub fn digest(&self) -> String {
        self.hasher
            .clone()
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry<T> {
    key: String,
    about: String,
    value: T,
}

/// The cache under one directory.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    read: bool,
}

impl Cache {
    /// The cache in `dir`; reads are skipped when `ALLOCASM_NO_CACHE=1`.
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: dir.into(),
            read: std::env::var("ALLOCASM_NO_CACHE").as_deref() != Ok("1")
                && !NO_READ.load(Ordering::Relaxed),
        }
    }

    /// The cache of the current project: `<target root>/cache`.
    pub fn of_project() -> Cache {
        Cache::new(super::default_target_root().join("cache"))
    }

    fn path(&self, kind: &str, key: &Key) -> PathBuf {
        self.dir.join(kind).join(format!("{}.json", key.digest()))
    }

    /// The value stored under `key`, if there is a readable one.
    pub fn get<T: DeserializeOwned>(&self, kind: &str, key: &Key) -> Option<T> {
        self.read.then(|| self.lookup(kind, key)).flatten()
    }

    fn lookup<T: DeserializeOwned>(&self, kind: &str, key: &Key) -> Option<T> {
        let text = std::fs::read_to_string(self.path(kind, key)).ok()?;
        let entry: Entry<T> = serde_json::from_str(&text).ok()?;
        (entry.key == key.digest()).then_some(entry.value)
    }

    /// Stores `value` under `key`; a failure to write only costs the next
    /// run a measurement.
    pub fn put<T: Serialize>(&self, kind: &str, key: &Key, value: &T) {
        let path = self.path(kind, key);
        let entry = Entry {
            key: key.digest(),
            about: key.text.clone(),
            value,
        };
        let Ok(json) = serde_json::to_string(&entry) else {
            return;
        };
        // A failure to write only costs the next run a measurement.
        let _ = write_atomically(&path, json.as_bytes());
    }
}

/// Writes `bytes` to `path` through a temporary file beside it and a
/// rename, creating the directory: a reader (or an interrupted run) sees
/// the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `program --version`'s output (memoized per program): a tool's version
/// as a key part.
pub fn tool_version(program: &str) -> String {
    static SEEN: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    crate::tools::memoized(&SEEN, program, || {
        Command::new(program)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_else(|e| format!("(--version failed: {e})"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("allocasm-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_value_comes_back_under_its_key_only() {
        let dir = scratch("roundtrip");
        let cache = Cache::new(&dir);
        let mut k = Key::new("t");
        k.text("driver").part(b"bytes of the driver");
        assert_eq!(cache.get::<Vec<u32>>("t", &k), None);
        cache.put("t", &k, &vec![1u32, 2, 3]);
        assert_eq!(cache.get::<Vec<u32>>("t", &k), Some(vec![1, 2, 3]));
        // Another binary (one byte differs), another tool version: misses.
        let mut other = Key::new("t");
        other.text("driver").part(b"bytes of the driveR");
        assert_eq!(cache.get::<Vec<u32>>("t", &other), None);
        let mut tool = Key::new("t");
        tool.text("driver")
            .part(b"bytes of the driver")
            .text("qemu 9.0");
        assert_eq!(cache.get::<Vec<u32>>("t", &tool), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parts_are_not_confused_by_where_they_split() {
        let mut a = Key::new("t");
        a.part(b"ab").part(b"c");
        let mut b = Key::new("t");
        b.part(b"a").part(b"bc");
        assert_ne!(a.digest(), b.digest());
    }

    #[test]
    fn a_corrupt_entry_is_a_miss_and_is_rewritten() {
        let dir = scratch("corrupt");
        let cache = Cache::new(&dir);
        let mut k = Key::new("t");
        k.text("x");
        cache.put("t", &k, &7u64);
        let path = cache.path("t", &k);
        std::fs::write(&path, "{\"key\": \"").unwrap();
        assert_eq!(cache.get::<u64>("t", &k), None);
        cache.put("t", &k, &8u64);
        assert_eq!(cache.get::<u64>("t", &k), Some(8));
        // An entry whose stored key is another's (a renamed file) is a miss.
        let mut other = Key::new("t");
        other.text("y");
        std::fs::copy(&path, cache.path("t", &other)).unwrap();
        assert_eq!(cache.get::<u64>("t", &other), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
