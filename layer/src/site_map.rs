//! Site ranges that stay the same from run to run.
//!
//! Each instrumented module's sites take a range of the device's site counters, and the range's first
//! number is baked into the module. Handed out in the order modules came in, they gave an app that creates
//! its modules from several threads (or in any order that can change) different bytes each run, and the
//! driver's shader cache missed every instrumented module that moved: on llvmpipe, minutes a run for one
//! large shader. So the ranges a run hands out are appended to a file per program and instrumentation
//! settings, `<cache>/sites/<program>-<settings>.txt`, one line per module; the next run gives a module it
//! lists the same range, and a new module a range past all of them.
//!
//! The file is only a cache. Lines it cannot parse are skipped; a range that overlaps one listed before it
//! (two processes of a program appending at once, each handing out the same free range) is dropped, and its
//! module gets a new range when it comes; a file whose ranges reach past half the counters is started
//! afresh; and where it cannot be read or written, or is not such a file, it is left as it is and the
//! ranges are handed out as before (a debug line).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A module as the map knows it: its shader id and the fragment output components it was instrumented
/// for (empty: all).
pub type Key = (u64, Vec<u8>);

/// The file's first line; a file that starts otherwise is not used.
const HEADER: &str = "blackbox-sites 1\n";

/// The ranges of one device's modules.
pub struct SiteMap {
    /// By module: its first site and how many it has.
    known: HashMap<Key, (u32, u32)>,
    /// The first site past every range known.
    next: u32,
    /// Where new ranges are appended; `None`: kept in memory only.
    file: Option<File>,
}

impl SiteMap {
    /// Ranges kept in memory only, handed out in the order modules come.
    pub fn in_memory() -> Self {
        SiteMap {
            known: HashMap::new(),
            next: 0,
            file: None,
        }
    }

    /// The map of this program under these settings (`settings`: a digest of everything that changes what
    /// the engine makes of a module, see [`settings_digest`]), kept under `cache_dir`. `sites`: the
    /// device's counters.
    pub fn open(cache_dir: Option<&Path>, settings: u64, sites: u32) -> Self {
        let Some(cache_dir) = cache_dir else {
            debug!("site ranges are not kept between runs: no cache folder (XDG_CACHE_HOME, HOME)");
            return Self::in_memory();
        };
        let path = cache_dir.join("sites").join(format!(
            "{}-{settings:016x}.txt",
            program_name().unwrap_or_else(|| "unknown".into())
        ));
        match Self::load(&path, sites / 2) {
            Ok(map) => map,
            Err(e) => {
                debug!(
                    "site ranges are not kept between runs: {}: {e}",
                    path.display()
                );
                Self::in_memory()
            }
        }
    }

    fn load(path: &Path, limit: u32) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            crate::output::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(crate::output::FILE_MODE)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(crate::output::FILE_MODE))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        if !text.is_empty() && !text.starts_with(HEADER) {
            // Not a file of ours (or of another version): left as it is.
            return Err(std::io::Error::other("not a file of site ranges"));
        }
        let mut map = Self::parse(&text);
        if text.is_empty() || map.next > limit {
            file.set_len(0)?;
            file.write_all(HEADER.as_bytes())?;
            map = Self::in_memory();
        }
        debug!(
            "site ranges of {} modules from {}",
            map.known.len(),
            path.display()
        );
        map.file = Some(file);
        Ok(map)
    }

    /// The ranges of a file's lines (`<id> <components or -> <first site> <sites>`, numbers in hex but the
    /// last two), without a file to append to.
    fn parse(text: &str) -> Self {
        let mut map = Self::in_memory();
        // Ranges accepted so far: first site -> end.
        let mut taken: BTreeMap<u32, u32> = BTreeMap::new();
        for line in text.lines().skip(1) {
            let Some((key, base, count)) = parse_line(line) else {
                continue;
            };
            let Some(end) = base.checked_add(count) else {
                continue;
            };
            // A module listed again (renumbered: the engine gave it another count) keeps its latest range.
            if let Some((old, _)) = map.known.get(&key) {
                taken.remove(old);
            }
            let overlaps = taken
                .range(..=base)
                .next_back()
                .is_some_and(|(_, &e)| e > base)
                || taken.range(base..).next().is_some_and(|(&b, _)| b < end);
            if overlaps {
                continue;
            }
            taken.insert(base, end);
            map.known.insert(key, (base, count));
            map.next = map.next.max(end);
        }
        map
    }

    /// Where `key`'s sites start: its range from an earlier run or instrumentation, else the next free one.
    pub fn base(&self, key: &Key) -> u32 {
        self.known.get(key).map_or(self.next, |&(base, _)| base)
    }

    /// The first site past every known range: where a module whose known range no longer fits goes.
    pub fn next(&self) -> u32 {
        self.next
    }

    /// Records that `key` was instrumented with `count` sites from `base`. `false` when `base` is the
    /// module's known range and `count` does not fit it (the engine changed): then the caller instruments
    /// it again from [`SiteMap::next`].
    pub fn assign(&mut self, key: &Key, base: u32, count: u32) -> bool {
        if count == 0 {
            // No site: the base appears nowhere in the module.
            return true;
        }
        match self.known.get(key) {
            Some(&(b, c)) if b == base && c == count => return true,
            Some(&(b, _)) if b == base => return false,
            _ => {}
        }
        self.known.insert(key.clone(), (base, count));
        self.next = self.next.max(base.saturating_add(count));
        if let Some(file) = &mut self.file {
            let kept: String = match key.1.is_empty() {
                true => "-".into(),
                false => key.1.iter().map(|c| format!("{c:02x}")).collect(),
            };
            // One write of one line: lines of two processes appending at once do not interleave.
            let line = format!("{:016x} {kept} {base} {count}\n", key.0);
            if let Err(e) = file.write_all(line.as_bytes()) {
                debug!("site ranges are no longer kept between runs: {e}");
                self.file = None;
            }
        }
        true
    }
}

fn parse_line(line: &str) -> Option<(Key, u32, u32)> {
    let mut fields = line.split(' ');
    let id = u64::from_str_radix(fields.next()?, 16).ok()?;
    let kept = match fields.next()? {
        "-" => Vec::new(),
        hex if hex.len() % 2 == 0 => (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?,
        _ => return None,
    };
    let base = fields.next()?.parse().ok()?;
    let count = fields.next()?.parse().ok()?;
    if fields.next().is_some() {
        return None;
    }
    Some(((id, kept), base, count))
}

/// The program's file name, made safe for a file name of its own.
fn program_name() -> Option<String> {
    let exe: PathBuf = std::env::current_exe().ok()?;
    let name = exe.file_name()?.to_string_lossy();
    Some(
        name.chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
                _ => '_',
            })
            .take(64)
            .collect(),
    )
}

/// A digest of what changes the engine's output for a module besides its words and its site base: the
/// engine's options with the address and base left out, and the layer's version.
pub fn settings_digest(options: &blackbox_engine::Options) -> u64 {
    let options = blackbox_engine::Options {
        error_buffer_address: 0,
        site_base: 0,
        ..options.clone()
    };
    let text = format!("{} {options:?}", env!("CARGO_PKG_VERSION"));
    // FNV-1a: the same digest in every build, unlike std's hasher.
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: u64) -> Key {
        (id, Vec::new())
    }

    #[test]
    fn lines_give_ranges_and_overlapping_ones_are_dropped() {
        let text = "blackbox-sites 1\n\
                    00000000000000aa - 0 3\n\
                    00000000000000bb 0f01 3 2\n\
                    00000000000000cc - 4 5\n\
                    not a line\n\
                    00000000000000dd - 10 1\n";
        let map = SiteMap::parse(text);
        assert_eq!(map.base(&key(0xaa)), 0);
        assert_eq!(map.base(&(0xbb, vec![0x0f, 0x01])), 3);
        // cc's range 4..9 overlaps bb's 3..5: cc gets the next free range when it comes.
        assert_eq!(map.base(&key(0xcc)), 11);
        assert_eq!(map.base(&key(0xdd)), 10);
        assert_eq!(map.next(), 11);
    }

    #[test]
    fn a_module_listed_again_keeps_its_latest_range() {
        let map =
            SiteMap::parse("blackbox-sites 1\n00000000000000aa - 0 3\n00000000000000aa - 7 4\n");
        assert_eq!(map.base(&key(0xaa)), 7);
        assert_eq!(map.next(), 11);
    }

    #[test]
    fn a_known_range_that_no_longer_fits_is_refused() {
        let mut map = SiteMap::parse("blackbox-sites 1\n00000000000000aa - 0 3\n");
        assert!(map.assign(&key(0xaa), 0, 3));
        assert!(!map.assign(&key(0xaa), 0, 4));
        assert!(map.assign(&key(0xaa), map.next(), 4));
        assert_eq!(map.base(&key(0xaa)), 3);
        assert_eq!(map.base(&key(0xbb)), 7);
    }

    #[test]
    fn ranges_written_are_read_back_and_a_full_file_starts_afresh() {
        let dir = std::env::temp_dir().join(format!("bb-site-map-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sites").join("app.txt");
        let mut map = SiteMap::load(&path, 100).unwrap();
        assert!(map.assign(&key(1), map.base(&key(1)), 5));
        assert!(map.assign(&(2, vec![1]), map.base(&(2, vec![1])), 60));
        drop(map);
        let map = SiteMap::load(&path, 100).unwrap();
        assert_eq!((map.base(&key(1)), map.base(&(2, vec![1]))), (0, 5));
        assert_eq!(map.next(), 65);
        // Past the limit: the file is started afresh.
        let map = SiteMap::load(&path, 50).unwrap();
        assert_eq!(map.next(), 0);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), HEADER);
        // A file that is not one of these is left alone.
        std::fs::write(&path, "something else\n").unwrap();
        assert!(SiteMap::load(&path, 100).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "something else\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
