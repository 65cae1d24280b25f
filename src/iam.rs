//! The IAM actions each party needs on the lock table, in one place: the
//! templates' policies are checked against these lists (tests/iac), and the
//! integration tests check that the code calls exactly these and no others.

/// The function serving FleetLock: one `DescribeTable` at start-up, then one
/// conditional `UpdateItem` per call.
pub const FUNCTION_ACTIONS: &[&str] = &["dynamodb:DescribeTable", "dynamodb:UpdateItem"];

/// An operator running `fleetlock status` (`GetItem`, `Scan`) and `release`
/// (`UpdateItem`, and a `Scan` to say where an id holds a slot when it holds
/// none in the group named). No `CreateTable`: production tables come from
/// the templates.
pub const OPERATOR_ACTIONS: &[&str] = &["dynamodb:GetItem", "dynamodb:Scan", "dynamodb:UpdateItem"];

/// An IAM policy document granting `actions` on one table.
pub fn policy(actions: &[&str], table_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "FleetLockTable",
            "Effect": "Allow",
            "Action": actions,
            "Resource": table_arn,
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_exact_dynamodb_actions() {
        for actions in [FUNCTION_ACTIONS, OPERATOR_ACTIONS] {
            assert!(actions.is_sorted(), "{actions:?}");
            for action in actions {
                let name = action.strip_prefix("dynamodb:").unwrap();
                assert!(name.chars().all(|c| c.is_ascii_alphabetic()), "{action}");
            }
        }
        assert!(!OPERATOR_ACTIONS.contains(&"dynamodb:CreateTable"));
        assert!(!OPERATOR_ACTIONS.contains(&"dynamodb:DeleteItem"));
    }
}
