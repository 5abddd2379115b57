//! The `tafs` binary: the CLI of [`tafs::cli`].

fn main() {
    std::process::exit(tafs::cli::main());
}
