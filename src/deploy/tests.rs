use super::samconfig::{override_words, template_parameters};
use super::tfvars::module_variables;
use super::*;
use serde_json::Value;

#[test]
fn the_template_defaults_are_read_from_its_parameters() {
    let parameters = template_parameters(TEMPLATE);
    assert_eq!(parameters["Groups"], "default=1");
    assert_eq!(parameters["TimeZone"], "UTC");
    assert_eq!(parameters["Settle"], "");
    assert_eq!(parameters["AllowAnonymous"], "false");
    // Every parameter this check maps is one the template has, and the
    // template hands it to the function under that variable.
    for (parameter, var) in SAM_PARAMETERS {
        assert!(parameters.contains_key(*parameter), "{parameter}");
        assert!(
            TEMPLATE.contains(&format!("{var}: !Ref {parameter}")),
            "the template does not set {var} from {parameter}"
        );
    }
    assert!(TEMPLATE.contains("FLEETLOCK_AUTH: !If [AnonymousAllowed, disabled, required]"));
    assert!(TEMPLATE.contains("AnonymousAllowed: !Equals [!Ref AllowAnonymous, \"true\"]"));
}

#[test]
fn the_module_defaults_are_read_from_its_variables() {
    let variables = module_variables(MODULE_VARIABLES);
    assert_eq!(variables["groups"], serde_json::json!({"default": 1}));
    assert_eq!(variables["time_zone"], "UTC");
    assert_eq!(variables["allow_anonymous"], false);
    for (variable, _) in TF_VARIABLES {
        assert!(variables.contains_key(*variable), "{variable}");
    }
}

#[test]
fn a_replica_region_gates_without_slot_events_and_refuses_its_own() {
    let tf = "groups = { workers = 2 }\ndrain = { workers = \"15m\" }\n";
    let replica = format!("{tf}existing_table_name = \"fleetlock-locks\"\n");
    let gated = from_tfvars(&replica, "a.tfvars").unwrap();
    assert!(gated.refused.is_empty(), "{:?}", gated.refused);
    let doubled = from_tfvars(&format!("{replica}slot_events = true\n"), "a.tfvars").unwrap();
    assert_eq!(doubled.refused.len(), 1, "{:?}", doubled.refused);
    assert!(doubled.refused[0].starts_with("variable slot_events runs where the global table"));
    let alone = from_tfvars(tf, "a.tfvars").unwrap();
    assert!(alone.refused[0].starts_with("variable drain needs slot_events = true"));
}

#[test]
fn a_sam_stack_on_a_global_table_gates_without_slot_events_and_needs_the_stream_for_them() {
    let parameters = |extra: &str| {
        format!(
            "version = 0.1\n[default.deploy.parameters]\nparameter_overrides = [\n  \
                 'Groups=\"default=1\"',\n  'Drain=\"default=15m\"',\n  \
                 'ExistingTableName=\"fleetlock-locks\"',\n{extra}]\n"
        )
    };
    let gated = from_samconfig(&parameters(""), "default", "samconfig.toml").unwrap();
    assert!(gated.refused.is_empty(), "{:?}", gated.refused);
    let streamless = from_samconfig(
        &parameters("  'SlotEvents=\"true\"',\n"),
        "default",
        "samconfig.toml",
    )
    .unwrap();
    assert_eq!(streamless.refused.len(), 1, "{:?}", streamless.refused);
    assert!(streamless.refused[0].contains("needs ExistingTableStreamArn"));
}

#[test]
fn a_drain_gate_without_slot_events_is_what_the_deploy_refuses() {
    let without = from_tfvars("drain = { workers = \"15m\" }\n", "a.tfvars").unwrap();
    assert_eq!(without.vars["FLEETLOCK_DRAIN"], "workers=15m");
    assert!(
        without.refused[0].starts_with("variable drain needs slot_events = true"),
        "{:?}",
        without.refused
    );
    let with = from_tfvars(
        "drain = { workers = \"15m\" }\nslot_events = true\n",
        "a.tfvars",
    )
    .unwrap();
    assert!(with.refused.is_empty(), "{:?}", with.refused);
    let none = from_tfvars("groups = { workers = 1 }\n", "a.tfvars").unwrap();
    assert!(none.refused.is_empty());
    let sam = "[default.deploy.parameters]\nparameter_overrides = [\"Drain=workers=15m\"]\n";
    let refused = from_samconfig(sam, "default", "samconfig.toml")
        .unwrap()
        .refused;
    assert!(
        refused[0].starts_with("parameter Drain needs SlotEvents=true"),
        "{refused:?}"
    );
}

#[test]
fn a_return_gate_without_slot_events_is_what_the_deploy_refuses() {
    let tf = "groups = { workers = 2 }\nreturn_gate = { workers = \"20m\" }\n";
    let without = from_tfvars(tf, "a.tfvars").unwrap();
    assert_eq!(without.vars["FLEETLOCK_RETURN"], "workers=20m");
    assert!(
        without.refused[0].starts_with("variable return_gate needs slot_events = true"),
        "{:?}",
        without.refused
    );
    let with = from_tfvars(&format!("{tf}slot_events = true\n"), "a.tfvars").unwrap();
    assert!(with.refused.is_empty(), "{:?}", with.refused);
    let sam = "[default.deploy.parameters]\nparameter_overrides = [\"Return=workers=20m\"]\n";
    let inputs = from_samconfig(sam, "default", "samconfig.toml").unwrap();
    assert_eq!(inputs.vars["FLEETLOCK_RETURN"], "workers=20m");
    assert!(
        inputs.refused[0].starts_with("parameter Return needs SlotEvents=true"),
        "{:?}",
        inputs.refused
    );
}

#[test]
fn overrides_split_as_sam_splits_them() {
    assert_eq!(
        override_words(r#"Groups="default=1,workers=3" Architecture=x86_64 Clients='a b'"#)
            .unwrap(),
        [
            "Groups=default=1,workers=3",
            "Architecture=x86_64",
            "Clients=a b"
        ]
    );
    assert_eq!(
        override_words(r#"Settle="db=\"1m\"""#).unwrap(),
        ["Settle=db=\"1m\""]
    );
    assert!(override_words(r#"Groups="default=1"#).is_err());
}

#[test]
fn a_samconfig_sets_the_functions_variables_over_the_defaults() {
    let text = r#"
[default.deploy.parameters]
parameter_overrides = "Groups=\"default=1,workers=3\" Architecture=x86_64"
[prod.deploy.parameters]
parameter_overrides = ["Groups=\"db=1\"", "AllowAnonymous=true"]
"#;
    let inputs = from_samconfig(text, "default", "samconfig.toml").unwrap();
    assert_eq!(inputs.vars["FLEETLOCK_GROUPS"], "default=1,workers=3");
    assert_eq!(inputs.vars["FLEETLOCK_TIME_ZONE"], "UTC");
    assert_eq!(inputs.vars["FLEETLOCK_AUTH"], "required");
    assert_eq!(inputs.given, ["Groups", "Architecture"]);
    let prod = from_samconfig(text, "prod", "samconfig.toml").unwrap();
    assert_eq!(prod.vars["FLEETLOCK_GROUPS"], "db=1");
    assert_eq!(prod.vars["FLEETLOCK_AUTH"], "disabled");
    assert_eq!(
        prod.reword("FLEETLOCK_GROUPS: 'x' is wrong"),
        "parameter Groups (FLEETLOCK_GROUPS): 'x' is wrong"
    );
}

#[test]
fn a_samconfig_typo_is_refused_with_the_name_meant() {
    let typo = from_samconfig(
        "[default.deploy.parameters]\nparameter_overrides = \"Group=db=1\"\n",
        "default",
        "samconfig.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(typo.contains("sets 'Group'"), "{typo}");
    assert!(typo.contains("did you mean 'Groups'?"), "{typo}");
    let env = from_samconfig("[default.deploy.parameters]\n", "prdo", "s.toml")
        .unwrap_err()
        .to_string();
    assert_eq!(
        env, "s.toml has no config-env 'prdo' (it has: default)",
        "no guess that far off"
    );
    let near = from_samconfig("[prod.deploy.parameters]\n", "prdo", "s.toml")
        .unwrap_err()
        .to_string();
    assert!(near.contains("(did you mean 'prod'?)"), "{near}");
    assert!(from_samconfig("not = [toml", "default", "s.toml").is_err());
}

#[test]
fn a_tfvars_file_is_rendered_as_the_module_renders_it() {
    let text = r#"
groups = { workers = 3, default = 1, "*" = "2" }
settle = { workers = "10m" }
maintenance_windows = {
  db = [{ days = ["Sat", "Sun"], start_time = "22:00", length_minutes = 120 }]
}
clients      = ["a:default:00:11", "b:db:22:33"]
alarm_pauses = { "db-latency" = ["db"], "api-5xx" = ["*"] }
region       = "eu-west-1"
"#;
    let inputs = from_tfvars(text, "prod.tfvars").unwrap();
    assert_eq!(inputs.vars["FLEETLOCK_GROUPS"], "*=2,default=1,workers=3");
    assert_eq!(inputs.vars["FLEETLOCK_SETTLE"], "workers=10m");
    assert_eq!(
        inputs.vars["FLEETLOCK_WINDOWS"],
        "db: days=Sat,Sun start_time=22:00 length_minutes=120"
    );
    assert_eq!(
        inputs.vars["FLEETLOCK_CLIENTS"],
        "a:default:00:11 b:db:22:33"
    );
    assert_eq!(
        inputs.vars["FLEETLOCK_ALARM_PAUSES"],
        "api-5xx=*;db-latency=db"
    );
    assert_eq!(inputs.vars["FLEETLOCK_MAX_WILDCARD_GROUPS"], "100");
    assert_eq!(inputs.vars["FLEETLOCK_AUTH"], "required");
    // A root module's own variable is left alone.
    assert!(!inputs.given.contains(&"region".to_owned()));
    let json = from_tfvars(
        r#"{"groups": {"db": 2}, "allow_anonymous": true}"#,
        "x.tfvars.json",
    )
    .unwrap();
    assert_eq!(json.vars["FLEETLOCK_GROUPS"], "db=2");
    assert_eq!(json.vars["FLEETLOCK_AUTH"], "disabled");
}

#[test]
fn a_tfvars_typo_or_wrong_shape_is_refused() {
    let typo = from_tfvars("grups = { db = 1 }\n", "p.tfvars")
        .unwrap_err()
        .to_string();
    assert_eq!(
        typo,
        "p.tfvars sets 'grups', which the module has no variable of (did you mean 'groups'?)"
    );
    let shape = from_tfvars("groups = [\"db\"]\n", "p.tfvars")
        .unwrap_err()
        .to_string();
    assert!(shape.contains("variable groups: must be a map"), "{shape}");
    assert!(from_tfvars("provider \"aws\" {}\n", "p.tfvars").is_err());
    assert!(from_tfvars("groups = {", "p.tfvars").is_err());
}

/// The README's own `module` block is what `config check --tfvars` reads:
/// its groups literally, its credentials named as Terraform's to read.
#[test]
fn the_readmes_module_block_is_checked_as_written() {
    let readme = include_str!("../../README.md");
    let start = readme.find("```hcl\n").expect("the README's module block") + 8;
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    assert!(block.contains("module \"fleetlock\""), "{block}");
    let inputs = from_tfvars(block, "main.tf").unwrap();
    assert_eq!(inputs.module.as_deref(), Some("fleetlock"));
    assert_eq!(
        inputs.vars["FLEETLOCK_GROUPS"],
        "default=1,fleetlock-check=2,workers=3"
    );
    assert!(!inputs.vars.contains_key("FLEETLOCK_CLIENTS"));
    assert!(
        inputs
            .unread
            .contains(&("clients".into(), "var.fleetlock_clients".into())),
        "{:?}",
        inputs.unread
    );
    let var = |name: &str| inputs.vars.get(name).cloned();
    crate::config::Config::checked(var).unwrap();
}

/// The settings each example of the module deploys are valid: the
/// literal inputs of its `module` block, with a stand-in credential for
/// its `var.clients`.
#[test]
fn every_terraform_examples_settings_start() {
    let examples = [
        include_str!("../../infra/examples/basic/main.tf"),
        include_str!("../../infra/examples/complete/main.tf"),
        include_str!("../../infra/examples/function-url/main.tf"),
        include_str!("../../infra/examples/private/main.tf"),
        include_str!("../../infra/examples/three-regions/main.tf"),
    ];
    let listed = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/infra/examples"))
        .unwrap()
        .count();
    assert_eq!(listed, examples.len(), "list every example above");
    for example in examples {
        let body = hcl::parse(example).unwrap();
        let module = body
            .blocks()
            .find(|block| block.identifier() == "module")
            .expect("a module block");
        let mut inputs = serde_json::Map::new();
        for attribute in module.body().attributes() {
            let known = TF_VARIABLES
                .iter()
                .any(|(name, _)| *name == attribute.key());
            // An expression (the three regions' shared locals) is left
            // to the example's plan in tests/iac, which evaluates it.
            let literal = !matches!(attribute.expr(), hcl::Expression::Traversal(_));
            if known && literal && attribute.key() != "clients" {
                let value = serde_json::to_value(hcl::Value::from(attribute.expr().clone()));
                inputs.insert(attribute.key().to_owned(), value.unwrap());
            }
        }
        inputs.insert(
            "clients".into(),
            serde_json::json!([format!(
                "fleet:*:00112233445566778899aabbccddeeff:{}",
                "0".repeat(64)
            )]),
        );
        let text = Value::Object(inputs).to_string();
        let deployed = from_tfvars(&text, "example.tfvars.json").unwrap();
        let var = |name: &str| deployed.vars.get(name).cloned();
        crate::config::Config::checked(var).unwrap_or_else(|e| panic!("{e:?}: {text}"));
        crate::config::alarm_gates(var).unwrap();
    }
}

/// Every samconfig.toml the docs show (a ```toml block with
/// `parameter_overrides`), and the repository's own, names parameters
/// the template has and gives settings that start; its `Clients`, a
/// placeholder there, is left out. No doc deploys with
/// `--parameter-overrides`, which would replace samconfig.toml's list.
#[test]
fn every_documented_samconfig_is_valid_and_no_doc_overrides_it() {
    let docs = crate::config::docs_text();
    let mut samconfigs = vec![include_str!("../../samconfig.toml").to_owned()];
    for block in docs.split("```toml\n").skip(1) {
        let block = block.split("```").next().unwrap();
        if block.contains("parameter_overrides") {
            samconfigs.push(if block.lines().any(|l| l.starts_with("[")) {
                block.to_owned()
            } else {
                format!("[default.deploy.parameters]\n{block}")
            });
        }
    }
    assert!(samconfigs.len() >= 2, "no samconfig in the docs");
    // Every config-env of each (a global table's regions have one each).
    let environments = samconfigs.iter().flat_map(|text| {
        let parsed: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        let names: Vec<String> = parsed
            .iter()
            .filter(|(_, env)| env.get("deploy").is_some())
            .map(|(name, _)| name.clone())
            .collect();
        names.into_iter().map(move |name| (text, name))
    });
    let mut checked = 0;
    for (text, environment) in environments {
        checked += 1;
        let inputs = from_samconfig(text, &environment, "doc.toml")
            .unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(inputs.given.contains(&"Groups".to_owned()), "{text}");
        let var = |name: &str| {
            (!matches!(name, "FLEETLOCK_CLIENTS" | "FLEETLOCK_AUTH"))
                .then(|| inputs.vars.get(name).cloned())
                .flatten()
        };
        crate::config::Config::checked(var).unwrap_or_else(|e| panic!("{e:?}: {text}"));
        crate::config::alarm_gates(var).unwrap();
        assert!(
            inputs.refused.is_empty(),
            "{environment}: {:?}",
            inputs.refused
        );
    }
    assert!(
        checked > samconfigs.len(),
        "the regions' config-envs were not read"
    );
    for (at, _) in docs.match_indices("sam deploy --parameter-overrides") {
        // Only where the docs say what such a deploy keeps and drops.
        let after: String = docs[at..].chars().take(120).collect();
        assert!(
            after.contains("has to repeat every"),
            "a doc deploys with --parameter-overrides: {after}"
        );
    }
}
