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

const KUBERNETES: [&str; 3] = ["kube_client::", "k8s_openapi::", "fleetlock::agent::"];

/// The Kubernetes agent is a binary of its own: neither the function nor the
/// command line links the Kubernetes client, though this test build has the
/// feature on for all three.
#[test]
fn only_the_agents_binary_links_the_kubernetes_client() {
    let agent = symbols_naming(env!("CARGO_BIN_EXE_fleetlock-kube-agent"), &KUBERNETES);
    for (needle, in_agent) in KUBERNETES.iter().zip(&agent) {
        assert!(
            *in_agent > 0,
            "{needle}: none in fleetlock-kube-agent either"
        );
    }
    for binary in [
        env!("CARGO_BIN_EXE_fleetlock-lambda"),
        env!("CARGO_BIN_EXE_fleetlock"),
    ] {
        let found = symbols_naming(binary, &KUBERNETES);
        assert_eq!(found, [0, 0, 0], "{binary}");
    }
}

/// The function's zip is built without the feature `kube-agent`
/// (scripts/build-lambda, the templates' `rust-cargolambda`): the
/// Kubernetes client is not even compiled for it.
#[test]
fn the_functions_build_does_not_compile_the_kubernetes_client() {
    let tree = |features: &[&str]| {
        let run = Command::new(env!("CARGO"))
            .args(["tree", "--offline", "--edges", "normal", "--prefix", "none"])
            .args(features)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    let has_kube = |text: &str| text.lines().any(|l| l.starts_with("kube-client "));
    assert!(!has_kube(&tree(&[])), "the default build compiles kube");
    assert!(
        has_kube(&tree(&["--features", "kube-agent"])),
        "the check sees kube"
    );
    let build =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/build-lambda"))
            .unwrap();
    assert!(!build.contains("kube-agent") && !build.contains("--all-features"));
}
