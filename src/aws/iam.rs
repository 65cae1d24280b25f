//! The IAM actions each party needs, in one place: the templates' policies
//! are checked against these lists (tests/iac), and the integration tests
//! check that the code calls exactly these and no others.

/// The function serving FleetLock, on its table: one `DescribeTable` at
/// start-up (and, with `*` or zones, one `GetItem` of the groups `*` made,
/// to name those the settings read otherwise now), then one conditional
/// `UpdateItem` per call; on a global table (`FLEETLOCK_REGION`) one
/// `GetItem` of the regions' records every 30 s.
pub const FUNCTION_ACTIONS: &[&str] = &[
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:UpdateItem",
];

/// An operator, on the table: `status` (`GetItem`, `Scan`), `release`,
/// `pause`, `resume` (`UpdateItem`, and a `Scan` for `--all` or to say where
/// an id holds a slot), `forget` (`DeleteItem`, then `UpdateItem` on the
/// list of groups only `*` covers). No `CreateTable`: production tables come
/// from the templates.
pub const OPERATOR_TABLE_ACTIONS: &[&str] = &[
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:Scan",
    "dynamodb:UpdateItem",
];

/// An operator, on the function: `status --function` reads the deployed
/// configuration (slots, settle times, windows).
pub const OPERATOR_FUNCTION_ACTIONS: &[&str] = &["lambda:GetFunctionConfiguration"];

/// An operator, on the account's tags: `status --hosts tags` and `hosts`
/// find the instance that sends an id by its tag. The Tagging API has no
/// resource-level permissions: the resource is `*`, and the action reads
/// tags only.
pub const OPERATOR_TAG_ACTIONS: &[&str] = &["tag:GetResources"];

/// A node, on itself: the boot unit tags its own instance with the id its
/// Zincati sends (contrib/butane/fleetlock-id-tag.bu).
pub(crate) const NODE_TAGGING_ACTIONS: &[&str] = &["ec2:CreateTags"];

/// The slot-events function, on the table's stream: what Lambda's event
/// source mapping reads with the function's role.
pub(crate) const SLOT_EVENTS_STREAM_ACTIONS: &[&str] = &[
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
];

/// The slot-events function, on its bus.
pub const SLOT_EVENTS_BUS_ACTIONS: &[&str] = &["events:PutEvents"];

/// The slot-events function, on its on-failure queue: Lambda sends a failed
/// batch's description there with the function's role.
pub(crate) const SLOT_EVENTS_QUEUE_ACTIONS: &[&str] = &["sqs:SendMessage"];

/// The alarm-pauses function, on the table: one `DescribeTable` at start-up,
/// a `GetItem` for each group the configuration names (reconciled first), a
/// `Scan` to read every other group's alarm pauses, one `UpdateItem` per
/// change.
pub const ALARM_PAUSES_TABLE_ACTIONS: &[&str] = &[
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:Scan",
    "dynamodb:UpdateItem",
];

/// The alarm-pauses function, on the account's alarms: their states.
pub const ALARM_PAUSES_ALARM_ACTIONS: &[&str] = &["cloudwatch:DescribeAlarms"];

/// The drained function, on the table: one `DescribeTable` at start-up,
/// then one conditional `UpdateItem` per confirmation, one consistent
/// `GetItem` per slot read, and one consistent `Scan` per sweep (every 5
/// minutes).
pub const DRAINED_FUNCTION_ACTIONS: &[&str] = &[
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:Scan",
    "dynamodb:UpdateItem",
];

/// A drain hook (a Step Functions state machine, a Lambda, SSM Automation),
/// on the drained function: it confirms a drain by invoking it, and can do
/// nothing else to the table.
pub(crate) const DRAIN_HOOK_ACTIONS: &[&str] = &["lambda:InvokeFunction"];

/// The Kubernetes agent (`fleetlock-kube-agent`), on the table: one
/// `GetItem` per group a pass reads, and its two confirmations, a drain's
/// and a return's, each one conditional `UpdateItem`.
pub const KUBE_AGENT_ACTIONS: &[&str] = &["dynamodb:GetItem", "dynamodb:UpdateItem"];

/// The check-config function, on the table: one `DescribeTable` per
/// check; it never writes. (And `DescribeAlarms`, as the alarm-pauses
/// function, to find alarms that do not exist.)
pub(crate) const CHECK_CONFIG_TABLE_ACTIONS: &[&str] = &["dynamodb:DescribeTable"];

/// Who a policy is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PolicyFor {
    Operator,
    Function,
    SlotEvents,
    AlarmPauses,
    /// The nodes' instance role: tag itself with its Zincati id.
    NodeTagging,
    /// The drained function's own role.
    Drained,
    /// A drain hook: invoke the drained function, nothing more.
    DrainHook,
    /// The deploy's check of its settings (handler `check-config`).
    CheckConfig,
    /// The Kubernetes agent: read the groups, confirm drains and returns.
    KubeAgent,
}

impl PolicyFor {
    /// Every party's name, as `--for` takes it.
    pub(crate) const ALL: [&str; 9] = [
        "operator",
        "function",
        "slot-events",
        "alarm-pauses",
        "node-tagging",
        "drained",
        "drain-hook",
        "check-config",
        "kube-agent",
    ];

    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "operator" => Some(PolicyFor::Operator),
            "function" => Some(PolicyFor::Function),
            "slot-events" => Some(PolicyFor::SlotEvents),
            "alarm-pauses" => Some(PolicyFor::AlarmPauses),
            "node-tagging" => Some(PolicyFor::NodeTagging),
            "drained" => Some(PolicyFor::Drained),
            "drain-hook" => Some(PolicyFor::DrainHook),
            "check-config" => Some(PolicyFor::CheckConfig),
            "kube-agent" => Some(PolicyFor::KubeAgent),
            _ => None,
        }
    }
}

fn statement(sid: &str, actions: &[&str], resource: &str) -> serde_json::Value {
    serde_json::json!({
        "Sid": sid,
        "Effect": "Allow",
        "Action": actions,
        "Resource": resource,
    })
}

/// The function's policy on its table.
pub(crate) fn function_policy(table_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [statement("FleetLockTable", FUNCTION_ACTIONS, table_arn)],
    })
}

/// The drained function's policy on its table.
pub(crate) fn drained_policy(table_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [statement("FleetLockTable", DRAINED_FUNCTION_ACTIONS, table_arn)],
    })
}

/// A drain hook's policy: invoke the drained function (`function_arn`),
/// whose `drained` and `returned` actions confirm a drain and a return.
pub(crate) fn drain_hook_policy(function_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [statement("ConfirmDrains", DRAIN_HOOK_ACTIONS, function_arn)],
    })
}

/// The Kubernetes agent's policy on its table: read the groups, confirm
/// drains and returns.
pub(crate) fn kube_agent_policy(table_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [statement("FleetLockTable", KUBE_AGENT_ACTIONS, table_arn)],
    })
}

/// The on-call policy: the table, and the function's configuration.
pub(crate) fn operator_policy(table_arn: &str, function_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [
            statement("FleetLockTable", OPERATOR_TABLE_ACTIONS, table_arn),
            statement("FleetLockConfiguration", OPERATOR_FUNCTION_ACTIONS, function_arn),
            statement("InstanceHosts", OPERATOR_TAG_ACTIONS, "*"),
        ],
    })
}

/// The nodes' instance role: each instance may put the one tag
/// [`crate::aws::instance_tags::ID_TAG`] on itself and on no other
/// instance (the resource is the instance the request comes from), and only
/// while it carries none: a node cannot move its tag to another node's id.
pub(crate) fn node_tagging_policy() -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "TagItselfWithItsZincatiId",
            "Effect": "Allow",
            "Action": NODE_TAGGING_ACTIONS,
            "Resource": "arn:aws:ec2:*:*:instance/*",
            "Condition": {
                "StringEquals": { "aws:ARN": "${ec2:SourceInstanceARN}" },
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": [crate::aws::instance_tags::ID_TAG]
                },
                // Written once: only while the instance carries no such tag,
                // so a node cannot later take another node's id (the tag
                // script checks an existing tag and leaves an equal one).
                "Null": {
                    "ec2:ResourceTag/fleetlock:zincati-id": "true"
                },
            },
        }],
    })
}

/// The slot-events function: read the table's stream, put on one bus, send
/// to one queue.
pub(crate) fn slot_events_policy(
    table_arn: &str,
    bus_arn: &str,
    queue_arn: &str,
) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [
            statement("LockTableStream", SLOT_EVENTS_STREAM_ACTIONS, &format!("{table_arn}/stream/*")),
            statement("SlotEventsBus", SLOT_EVENTS_BUS_ACTIONS, bus_arn),
            statement("SlotEventsFailures", SLOT_EVENTS_QUEUE_ACTIONS, queue_arn),
        ],
    })
}

/// The alarm-pauses function: the table, and the states of this account's
/// alarms in this region.
pub(crate) fn alarm_pauses_policy(table_arn: &str, alarms_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [
            statement("LockTable", ALARM_PAUSES_TABLE_ACTIONS, table_arn),
            statement("AlarmStates", ALARM_PAUSES_ALARM_ACTIONS, alarms_arn),
        ],
    })
}

/// The check-config function's policy: read the table's definition and the
/// alarms' states, write nothing.
pub(crate) fn check_config_policy(table_arn: &str, alarms_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [
            statement("LockTable", CHECK_CONFIG_TABLE_ACTIONS, table_arn),
            statement("Alarms", ALARM_PAUSES_ALARM_ACTIONS, alarms_arn),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_exact_actions() {
        for (service, actions) in [
            ("dynamodb:", FUNCTION_ACTIONS),
            ("dynamodb:", OPERATOR_TABLE_ACTIONS),
            ("lambda:", OPERATOR_FUNCTION_ACTIONS),
            ("tag:", OPERATOR_TAG_ACTIONS),
            ("ec2:", NODE_TAGGING_ACTIONS),
            ("dynamodb:", SLOT_EVENTS_STREAM_ACTIONS),
            ("events:", SLOT_EVENTS_BUS_ACTIONS),
            ("sqs:", SLOT_EVENTS_QUEUE_ACTIONS),
            ("dynamodb:", ALARM_PAUSES_TABLE_ACTIONS),
            ("cloudwatch:", ALARM_PAUSES_ALARM_ACTIONS),
            ("dynamodb:", DRAINED_FUNCTION_ACTIONS),
            ("lambda:", DRAIN_HOOK_ACTIONS),
            ("dynamodb:", KUBE_AGENT_ACTIONS),
        ] {
            assert!(actions.is_sorted(), "{actions:?}");
            for action in actions {
                let name = action.strip_prefix(service).unwrap();
                assert!(name.chars().all(|c| c.is_ascii_alphabetic()), "{action}");
            }
        }
        assert!(!OPERATOR_TABLE_ACTIONS.contains(&"dynamodb:CreateTable"));
        // `forget` deletes an item only under a condition (nothing held,
        // nothing paused); the table itself stays out of reach.
        assert!(!OPERATOR_TABLE_ACTIONS.contains(&"dynamodb:DeleteTable"));
        assert!(!FUNCTION_ACTIONS.contains(&"dynamodb:DeleteItem"));
    }
}
