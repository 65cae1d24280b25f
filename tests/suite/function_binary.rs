//! The function's binary (`fleetlock-lambda`, the zip's `bootstrap`) carries
//! the entry points and nothing of the command line: read from the symbols
//! the linker kept, against the command line's binary, which has them.

use std::process::Command;

/// How many of the binary's symbols name each of `needles`.
fn symbols_naming(binary: &str, needles: &[&str]) -> Vec<usize> {
    let listed = Command::new("nm")
        .args(["--demangle", binary])
        .output()
        .expect("nm (binutils) runs");
    assert!(listed.status.success(), "nm {binary}");
    let text = String::from_utf8_lossy(&listed.stdout);
    needles
        .iter()
        .map(|needle| text.lines().filter(|l| l.contains(needle)).count())
        .collect()
}

const COMMAND_LINE: [&str; 5] = [
    "fleetlock::cli::",
    "clap_builder::",
    "hcl::",
    "aws_sdk_lambda::",
    "aws_sdk_resourcegroupstagging::",
];

#[test]
fn the_function_binary_links_nothing_of_the_command_line() {
    let function = symbols_naming(env!("CARGO_BIN_EXE_fleetlock-lambda"), &COMMAND_LINE);
    let cli = symbols_naming(env!("CARGO_BIN_EXE_fleetlock"), &COMMAND_LINE);
    for ((needle, in_function), in_cli) in COMMAND_LINE.iter().zip(&function).zip(&cli) {
        // The command line's binary has them: the check can see them.
        assert!(*in_cli > 0, "{needle}: none in fleetlock either");
        assert_eq!(*in_function, 0, "{needle} in fleetlock-lambda");
    }
    // And it has what a function needs.
    let needed = symbols_naming(
        env!("CARGO_BIN_EXE_fleetlock-lambda"),
        &[
            "fleetlock::entry::api::",
            "fleetlock::entry::drained::",
            "aws_sdk_dynamodb::",
        ],
    );
    assert!(needed.iter().all(|n| *n > 0), "{needed:?}");
}

/// aws-lc is built without its CPU jitter entropy source (.cargo/config.toml):
/// sampling it at the first TLS connection was most of a cold start's CPU.
#[test]
fn the_function_binary_seeds_its_tls_from_the_kernel_without_cpu_jitter() {
    let counts = symbols_naming(
        env!("CARGO_BIN_EXE_fleetlock-lambda"),
        &["RAND_bytes", "jent_"],
    );
    let (aws_lc, jitter) = (counts[0], counts[1]);
    // aws-lc is there, so its symbols can be seen: its jitter source is not.
    assert!(aws_lc > 0, "no aws-lc in fleetlock-lambda");
    assert_eq!(jitter, 0, "aws-lc's jitter entropy in fleetlock-lambda");
}

#[test]
fn the_function_binary_outside_lambda_says_what_it_is() {
    let run = Command::new(env!("CARGO_BIN_EXE_fleetlock-lambda"))
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(said.contains("the command line is 'fleetlock'"), "{said}");
}
