//! `config check --tfvars main.tf`: the inputs of a root module's `module`
//! block that calls this module, read literally, as the README's example
//! writes them. An input whose value only Terraform knows (`var.x`, a
//! template such as `"${path.root}/…"`, a function call) is not guessed: it
//! is named as not read, and the module checks it at plan time.

use super::DeployError;
use hcl::Expression;
use hcl::expr::ObjectKey;
use serde_json::Value;

/// The module block's arguments that are Terraform's, not the module's.
const META_ARGUMENTS: &[&str] = &[
    "source",
    "version",
    "providers",
    "count",
    "for_each",
    "depends_on",
];

/// What a `module` block gives the module.
#[derive(Debug, Default)]
pub(crate) struct ModuleInputs {
    /// The block's label (`module "fleetlock"`).
    pub(crate) label: String,
    /// Each literal input, as JSON.
    pub(crate) literal: serde_json::Map<String, Value>,
    /// Each input whose value only Terraform knows: its name and its text.
    pub(crate) unread: Vec<(String, String)>,
}

/// The inputs of the `module` block in `body` that calls this module: the
/// only one, or among several the one labelled `fleetlock` or whose source
/// names `fleetlock` or `infra`. `None` when `body` has no `module` block
/// (a tfvars file).
pub(crate) fn module_inputs(
    body: &hcl::Body,
    file: &str,
) -> Result<Option<ModuleInputs>, DeployError> {
    let modules: Vec<&hcl::Block> = body
        .blocks()
        .filter(|block| block.identifier() == "module")
        .collect();
    let label = |block: &hcl::Block| {
        block
            .labels()
            .first()
            .map(|l| l.as_str().to_owned())
            .unwrap_or_default()
    };
    let ours = |block: &hcl::Block| {
        let source = block
            .body()
            .attributes()
            .find(|a| a.key() == "source")
            .and_then(|a| match a.expr() {
                Expression::String(source) => Some(source.clone()),
                _ => None,
            })
            .unwrap_or_default();
        label(block) == "fleetlock"
            || source.contains("fleetlock")
            || source.trim_end_matches('/').ends_with("infra")
    };
    let module = match modules.as_slice() {
        [] => return Ok(None),
        [only] => *only,
        several => {
            let candidates: Vec<&hcl::Block> =
                several.iter().copied().filter(|b| ours(b)).collect();
            match candidates.as_slice() {
                [one] => *one,
                _ => {
                    let labels: Vec<String> = several.iter().map(|b| label(b)).collect();
                    return Err(DeployError::SeveralModules {
                        file: file.to_owned(),
                        labels: labels.join(", "),
                    });
                }
            }
        }
    };
    let mut inputs = ModuleInputs {
        label: label(module),
        ..ModuleInputs::default()
    };
    for attribute in module.body().attributes() {
        let name = attribute.key();
        if META_ARGUMENTS.contains(&name) {
            continue;
        }
        if literal(attribute.expr()) {
            let value = serde_json::to_value(hcl::Value::from(attribute.expr().clone())).map_err(
                |source| DeployError::Input {
                    file: file.to_owned(),
                    name: name.to_owned(),
                    source,
                },
            )?;
            inputs.literal.insert(name.to_owned(), value);
        } else {
            inputs
                .unread
                .push((name.to_owned(), attribute.expr().to_string()));
        }
    }
    Ok(Some(inputs))
}

/// Whether `expr` is a value as written, which needs no Terraform to read.
fn literal(expr: &Expression) -> bool {
    match expr {
        Expression::Null | Expression::Bool(_) | Expression::Number(_) | Expression::String(_) => {
            true
        }
        Expression::Array(items) => items.iter().all(literal),
        Expression::Object(object) => object.iter().all(|(key, value)| {
            let key_literal = match key {
                ObjectKey::Identifier(_) => true,
                ObjectKey::Expression(key) => literal(key),
                _ => false,
            };
            key_literal && literal(value)
        }),
        Expression::Parenthesis(inner) => literal(inner),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readmes_module_block_is_read_literally_and_its_variables_named() {
        let text = r#"
            terraform { required_version = ">= 1.5" }
            variable "fleetlock_clients" { type = list(string) }
            module "fleetlock" {
              source          = "./infra"
              lambda_zip_path = "${path.root}/target/lambda/fleetlock-arm64.zip"
              groups          = { default = 1, workers = 3, fleetlock-check = 2 }
              settle          = { "workers" = "10m" }
              clients         = var.fleetlock_clients
            }
        "#;
        let body = hcl::parse(text).unwrap();
        let inputs = module_inputs(&body, "main.tf").unwrap().unwrap();
        assert_eq!(inputs.label, "fleetlock");
        assert_eq!(
            Value::Object(inputs.literal),
            serde_json::json!({
                "groups": {"default": 1, "workers": 3, "fleetlock-check": 2},
                "settle": {"workers": "10m"},
            })
        );
        let unread: Vec<&str> = inputs.unread.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(unread, ["lambda_zip_path", "clients"]);
        assert_eq!(inputs.unread[1].1, "var.fleetlock_clients");
    }

    #[test]
    fn among_several_modules_the_one_that_is_plainly_this_one() {
        let text = r#"
            module "vpc" { source = "terraform-aws-modules/vpc/aws" }
            module "locks" {
              source = "git::https://example.com/fleetlock.git//infra?ref=v0.2.0"
              groups = { default = 2 }
            }
        "#;
        let body = hcl::parse(text).unwrap();
        let inputs = module_inputs(&body, "main.tf").unwrap().unwrap();
        assert_eq!(inputs.label, "locks");
        let text = r#"
            module "a" { source = "./a" }
            module "b" { source = "./b" }
        "#;
        let err = module_inputs(&hcl::parse(text).unwrap(), "main.tf")
            .unwrap_err()
            .to_string();
        assert!(err.contains("several module blocks (a, b)"), "{err}");
        let tfvars = hcl::parse("groups = { default = 1 }\n").unwrap();
        assert!(module_inputs(&tfvars, "p.tfvars").unwrap().is_none());
    }
}
