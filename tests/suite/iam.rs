//! The IAM enforcer's rules for the stand-ins written here (CloudWatch,
//! EventBridge, Lambda, the Tagging API): a call signed with a principal's
//! access key is answered only if the policy the templates ship for that
//! principal allows its action on its resource; otherwise as AWS answers,
//! `AccessDeniedException`, and the stand-in never sees it. The policies are
//! read from template.yaml and infra/ by tests/iac/shipped_policies.py
//! (scripts/lib.sh, `FLEETLOCK_SHIPPED_POLICIES`); DynamoDB's calls are
//! judged by tests/iac/iam_enforcer.py in front of DynamoDB Local, on the
//! same rules.

use std::sync::OnceLock;

use hyper::body::Bytes;
use hyper::http::request::Parts;
use serde_json::Value;

use crate::helpers::HARNESS_KEY;

const ACCOUNT: &str = "123456789012";

fn shipped() -> &'static Value {
    static POLICIES: OnceLock<Value> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let path = std::env::var("FLEETLOCK_SHIPPED_POLICIES").unwrap_or_else(|_| {
            panic!(
                "FLEETLOCK_SHIPPED_POLICIES is unset: the stand-ins enforce the templates' \
                 policies; run ./scripts/test (or cargo test, which starts the enforcer)"
            )
        });
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    })
}

/// Whether an IAM resource pattern (`*` any characters, `{name}` one name,
/// `{table}` the bound one) matches `resource`.
fn matches(pattern: &str, resource: &str, table: Option<&str>) -> bool {
    let Some(first) = pattern.find(['*', '{']) else {
        return pattern == resource;
    };
    let (literal, rest) = pattern.split_at(first);
    let Some(resource) = resource.strip_prefix(literal) else {
        return false;
    };
    if let Some(rest) = rest.strip_prefix('*') {
        return (0..=resource.len())
            .filter(|at| resource.is_char_boundary(*at))
            .any(|at| matches(rest, &resource[at..], table));
    }
    let close = rest.find('}').unwrap();
    let (hole, rest) = (&rest[1..close], &rest[close + 1..]);
    if let (Some(table), "table") = (table, hole) {
        return resource
            .strip_prefix(table)
            .is_some_and(|after| matches(rest, after, Some(table)));
    }
    let name_end = resource.find(['/', ':']).unwrap_or(resource.len());
    (1..=name_end)
        .filter(|at| resource.is_char_boundary(*at))
        .any(|at| matches(rest, &resource[at..], table))
}

/// Whether `principal`'s shipped policy allows `action` on `resource`.
pub fn allows(principal: &str, action: &str, resource: &str) -> bool {
    let (name, table) = match principal.split_once('.') {
        Some((name, table)) => (name, Some(table)),
        None => (principal, None),
    };
    let Some(statements) = shipped()[name].as_array() else {
        return false;
    };
    statements.iter().any(|statement| {
        statement.get("condition").is_none()
            && statement["actions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == action)
            && statement["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| matches(r.as_str().unwrap(), resource, table))
    })
}

/// (access key, region, service) of a SigV4-signed request.
fn caller(parts: &Parts) -> Option<(String, String, String)> {
    let authorization = parts.headers.get("authorization")?.to_str().ok()?;
    let scope = authorization.split("Credential=").nth(1)?;
    let mut fields = scope.split(['/', ',']);
    let key = fields.next()?.to_owned();
    let _date = fields.next()?;
    let region = fields.next()?.to_owned();
    let service = fields.next()?.to_owned();
    Some((key, region, service))
}

/// The IAM action and resource of a call to one of the stand-ins.
fn action_and_resource(
    parts: &Parts,
    body: &Bytes,
    region: &str,
    service: &str,
) -> (String, String) {
    let path = parts.uri.path();
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .map(str::to_owned);
    match service {
        "lambda" => {
            // /2015-03-31/functions/NAME/configuration or .../invocations
            let name = path.split('/').nth(3).unwrap_or("").to_owned();
            let name = name.rsplit(':').next().unwrap_or("").to_owned();
            let action = if path.ends_with("/invocations") {
                "lambda:InvokeFunction"
            } else if path.ends_with("/configuration") {
                "lambda:GetFunctionConfiguration"
            } else {
                "lambda:Unknown"
            };
            let resource = format!("arn:aws:lambda:{region}:{ACCOUNT}:function:{name}");
            (action.to_owned(), resource)
        }
        "events" => {
            let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let bus = json["Entries"][0]["EventBusName"]
                .as_str()
                .unwrap_or("default");
            let bus = bus.rsplit('/').next().unwrap_or(bus);
            (
                format!("events:{}", target.unwrap_or_default()),
                format!("arn:aws:events:{region}:{ACCOUNT}:event-bus/{bus}"),
            )
        }
        "tagging" => (
            format!("tag:{}", target.unwrap_or_default()),
            "*".to_owned(),
        ),
        "monitoring" => {
            let operation = path.rsplit("/operation/").next().unwrap_or("");
            (
                format!("cloudwatch:{operation}"),
                format!("arn:aws:cloudwatch:{region}:{ACCOUNT}:alarm:*"),
            )
        }
        other => (format!("{other}:Unknown"), "*".to_owned()),
    }
}

/// `None` when the call may go on to the stand-in; otherwise AWS's answer
/// to a call no policy allows (status, content type, body).
pub fn judge(parts: &Parts, body: &Bytes) -> Option<(u16, &'static str, Vec<u8>)> {
    let (key, region, service) = caller(parts)?;
    if key == HARNESS_KEY {
        return None;
    }
    let (action, resource) = action_and_resource(parts, body, &region, &service);
    if allows(&key, &action, &resource) {
        return None;
    }
    let principal = key.split('.').next().unwrap_or(&key);
    let message = format!(
        "User: arn:aws:sts::{ACCOUNT}:assumed-role/{principal}/fleetlock-tests is not authorized \
         to perform: {action} on resource: {resource} because no identity-based policy allows \
         the {action} action"
    );
    let body = serde_json::json!({
        "__type": "AccessDeniedException",
        "Message": message,
        "message": message,
    });
    let status = if service == "lambda" { 403 } else { 400 };
    Some((status, "application/json", body.to_string().into_bytes()))
}

#[test]
fn resource_patterns_bind_one_name_and_keep_streams_and_indexes_apart() {
    let table = "arn:aws:dynamodb:{region}:{account}:table/{table}";
    let locks = "arn:aws:dynamodb:eu-west-1:123456789012:table/locks";
    assert!(matches(table, locks, None));
    assert!(matches(table, locks, Some("locks")));
    assert!(!matches(table, locks, Some("other")));
    assert!(!matches(table, &format!("{locks}/stream/2026"), None));
    assert!(!matches(table, &format!("{locks}/index/byid"), None));
    let stream = "arn:aws:dynamodb:{region}:{account}:table/{table}/stream/*";
    assert!(matches(
        stream,
        &format!("{locks}/stream/2026-01-01T00:00:00.000"),
        None
    ));
    assert!(!matches(stream, locks, None));
    assert!(matches("*", "anything:at/all", None));
}
