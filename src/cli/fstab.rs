//! The form mount(8), `mount.fuse3` and /etc/fstab run a file system in:
//! `tafs GAME_DIR MOUNTPOINT [-o OPT[,OPT…]]` (also as `mount.tafs` / `mount.fuse.tafs`, with
//! mount(8)'s `-s -f -n -v -t TYPE`). Every `tafs mount` setting is spelled as an `-o`
//! option; this module only translates them into `tafs mount --daemon …` arguments, so both
//! forms run the same code. docs/MOUNT.md lists the options.

use std::ffi::{OsStr, OsString};

/// Options that take a value, and the `tafs mount` flag each becomes.
const VALUED: [(&str, &str); 12] = [
    ("uid", "--uid"),
    ("gid", "--gid"),
    ("state_dir", "--state-dir"),
    ("cache_size", "--cache-size"),
    ("max_member_size", "--max-member-size"),
    ("ttl", "--ttl"),
    ("threads", "--threads"),
    ("operation_gap", "--operation-gap"),
    ("archive_commit_delay", "--archive-commit-delay"),
    ("into", "--into"),
    ("priority", "--priority"),
    ("log", "--log"),
];

/// Options without a value, and the `tafs mount` flag each becomes.
const FLAGS: [(&str, &str); 3] = [
    ("ro", "--ro"),
    ("merged", "--merged"),
    ("no_watch", "--no-watch"),
];

/// The kernel's and FUSE's own options: passed on as `-o` (the mount refuses the ones it
/// cannot honour, e.g. `relatime`, with a clear error).
const KERNEL: [&str; 15] = [
    "allow_other",
    "allow_root",
    "atime",
    "noatime",
    "exec",
    "noexec",
    "nosuid",
    "nodev",
    "sync",
    "async",
    "dirsync",
    "relatime",
    "norelatime",
    "strictatime",
    "lazytime",
];

/// mount(8)'s and systemd's own options (`mount.fuse3` removes most of them before running
/// tafs; when mount(8) runs `mount.fuse.tafs` directly they arrive here): accepted and
/// ignored. `rw` is the default (a `--merged` mount without `into=` stays read-only);
/// `default_permissions` is always on; `dev`, `suid` (which `mount.fuse3` adds for root)
/// do not apply: every tafs mount is nodev,nosuid.
const IGNORED: [&str; 14] = [
    "defaults",
    "auto",
    "noauto",
    "user",
    "users",
    "nouser",
    "owner",
    "group",
    "_netdev",
    "nofail",
    "rw",
    "default_permissions",
    "dev",
    "suid",
];

/// When `args` (the whole command line, `args[0]` the program) is in the mount(8) form,
/// the equivalent `tafs mount` command line (empty for mount(8)'s `-f`: nothing to do), or
/// why it is not valid; `None` when it is an ordinary `tafs COMMAND …` line.
pub fn as_mount_command(args: &[OsString]) -> Option<Result<Vec<OsString>, String>> {
    let prog = args.first().map(std::path::Path::new)?;
    let by_name = prog
        .file_name()
        .and_then(OsStr::to_str)
        .is_some_and(|n| n.starts_with("mount."));
    if !by_name {
        // `tafs GAME_DIR MOUNTPOINT …`: the first word is no command and no flag
        let first = args.get(1)?.to_str().unwrap_or("/");
        let cmd = <super::Cli as clap::CommandFactory>::command();
        let command = first == "help" || cmd.find_subcommand(first).is_some();
        if first.starts_with('-') || command || args.len() < 3 {
            return None;
        }
    }
    Some(translate(&args[1..]))
}

/// Translates the arguments after the program name.
fn translate(args: &[OsString]) -> Result<Vec<OsString>, String> {
    let mut paths: Vec<OsString> = Vec::new();
    let mut opts: Vec<String> = Vec::new();
    let mut fake = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let s = a.to_str().unwrap_or("");
        match s {
            "-o" => {
                let v = it.next().ok_or("-o needs OPT[,OPT…]")?;
                opts.push(v.to_str().ok_or("-o: options must be UTF-8")?.to_string());
            }
            // mount(8): -t TYPE (fuse.tafs), -s sloppy, -n no mtab, -v verbose, -f fake
            "-t" => {
                it.next().ok_or("-t needs a TYPE")?;
            }
            "-s" | "-n" | "-v" => {}
            "-f" => fake = true,
            _ if s.starts_with("-o") && s.len() > 2 => opts.push(s[2..].to_string()),
            _ if s.starts_with('-') && s.len() > 1 => {
                return Err(format!(
                    "{s}: unknown argument (the form is GAME_DIR MOUNTPOINT -o OPT[,OPT…])"
                ))
            }
            _ => paths.push(a.clone()),
        }
    }
    let [game, mnt] = <[OsString; 2]>::try_from(paths)
        .map_err(|_| "expected GAME_DIR MOUNTPOINT [-o OPT[,OPT…]]".to_string())?;
    let mut out: Vec<OsString> = vec!["tafs".into(), "mount".into()];
    let mut daemon = true;
    for o in opts
        .iter()
        .flat_map(|o| o.split(','))
        .filter(|o| !o.is_empty())
    {
        let (key, value) = match o.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (o, None),
        };
        if let Some((_, flag)) = VALUED.iter().find(|(k, _)| *k == key) {
            let v = value
                .filter(|v| !v.is_empty())
                .ok_or(format!("-o {key}= needs a value"))?;
            // a list inside one -o option: `priority=mymod.ufo:loose`
            let v = if key == "priority" {
                v.replace(':', ",")
            } else {
                v.to_string()
            };
            out.extend([OsString::from(*flag), v.into()]);
            continue;
        }
        if value.is_some() && (key == "comment" || key.starts_with("x-")) {
            continue;
        }
        if value.is_none() {
            if let Some((_, flag)) = FLAGS.iter().find(|(k, _)| *k == key) {
                out.push((*flag).into());
                continue;
            }
            if key == "foreground" {
                daemon = false;
                continue;
            }
            if key.starts_with("x-") || IGNORED.contains(&key) {
                continue;
            }
            if KERNEL.contains(&key) {
                out.extend(["-o".into(), key.into()]);
                continue;
            }
        }
        return Err(format!(
            "-o {o}: unknown mount option (tafs takes {}, {}, foreground, and the kernel's {})",
            VALUED
                .iter()
                .map(|(k, _)| format!("{k}="))
                .collect::<Vec<_>>()
                .join(", "),
            FLAGS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", "),
            KERNEL.join(", ")
        ));
    }
    if fake {
        // mount -f: everything but the mount itself; `tafs mount` has no dry run
        return Ok(Vec::new());
    }
    if daemon {
        out.push("--daemon".into());
    }
    out.extend(["--".into(), game, mnt]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::as_mount_command;
    use std::ffi::OsString;

    fn args(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    fn mount(s: &str) -> Result<String, String> {
        as_mount_command(&args(s))
            .expect("the mount form")
            .map(|v| {
                v.iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
    }

    #[test]
    fn ordinary_command_lines_are_left_alone() {
        for s in [
            "tafs mount a b",
            "tafs --help",
            "tafs gaf list x",
            "tafs -v mount a b",
            "tafs a",
            "tafs help mount",
        ] {
            assert!(as_mount_command(&args(s)).is_none(), "{s}");
        }
    }

    #[test]
    fn every_setting_is_an_option() {
        assert_eq!(
            mount("/usr/bin/tafs /g /m -o ro,allow_other,uid=5,gid=6,state_dir=/s,cache_size=1G,ttl=2,merged,priority=a.ufo:loose,noatime"),
            Ok("tafs mount --ro -o allow_other --uid 5 --gid 6 --state-dir /s --cache-size 1G --ttl 2 --merged --priority a.ufo,loose -o noatime --daemon -- /g /m".into())
        );
        assert_eq!(
            mount("mount.tafs /g /m -n -o rw,into=mods/x.ufo,merged,foreground -t fuse.tafs"),
            Ok("tafs mount --into mods/x.ufo --merged -- /g /m".into())
        );
    }

    #[test]
    fn mount_and_systemd_options_are_ignored() {
        assert_eq!(
            mount("/sbin/mount.fuse.tafs /g /m -o defaults,_netdev,nofail,noauto,user,x-systemd.automount,x-systemd.idle-timeout=60,comment=x"),
            Ok("tafs mount --daemon -- /g /m".into())
        );
    }

    #[test]
    fn unknown_options_are_named() {
        let e = mount("tafs /g /m -o ro,colour=blue").unwrap_err();
        assert!(e.starts_with("-o colour=blue: unknown mount option"), "{e}");
        assert!(mount("tafs /g /m -o uid")
            .unwrap_err()
            .contains("uid= needs a value"));
        assert!(mount("tafs /g -o ro").is_err());
        assert!(mount("mount.tafs /g /m -x").is_err());
    }
}
