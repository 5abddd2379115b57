fn main() {
    std::process::exit(tafs::cli::main());
}
