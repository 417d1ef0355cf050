fn main() -> std::process::ExitCode {
    rkmcp::cli::main()
}
