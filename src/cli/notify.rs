//! systemd's readiness protocol (`Type=notify`, sd_notify(3)): datagrams such as `READY=1`,
//! `STOPPING=1`, `STATUS=…` sent to the socket `$NOTIFY_SOCKET` names (a path, or an abstract
//! socket written `@name`). Without the variable every call does nothing.

use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The connection to the service manager, if one asked for notifications.
pub struct Notifier {
    sock: UnixDatagram,
    addr: SocketAddr,
}

impl Notifier {
    /// The socket of `$NOTIFY_SOCKET`; `None` when it is unset, or when it cannot be used (logged).
    pub fn from_env() -> Option<Notifier> {
        let name = std::env::var_os("NOTIFY_SOCKET")?;
        match Self::connect(&name) {
            Ok(n) => Some(n),
            Err(e) => {
                log::warn!("NOTIFY_SOCKET={}: {e}", name.to_string_lossy());
                None
            }
        }
    }

    fn connect(name: &std::ffi::OsStr) -> std::io::Result<Notifier> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = name.as_bytes();
        let addr = match bytes.strip_prefix(b"@") {
            Some(abs) => {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(abs)?
            }
            None if bytes.starts_with(b"/") => SocketAddr::from_pathname(name)?,
            None => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "neither an absolute path nor an abstract socket (@name)",
                ))
            }
        };
        Ok(Notifier {
            sock: UnixDatagram::unbound()?,
            addr,
        })
    }

    /// Sends `state` (newline-separated `KEY=VALUE` lines); a failure is only logged (the
    /// mount goes on whether or not the manager hears it).
    pub fn send(&self, state: &str) {
        if let Err(e) = self.sock.send_to_addr(state.as_bytes(), &self.addr) {
            log::warn!("NOTIFY_SOCKET: {e}");
        }
    }
}

/// Sends `state` to `$NOTIFY_SOCKET`, if set.
pub fn notify(state: &str) {
    if let Some(n) = Notifier::from_env() {
        n.send(state);
    }
}
