//! `iam-policy`: the least-privilege policy of each party, with placeholders
//! for the ARNs not given.

use std::io::Write;

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};

use crate::aws::iam::{self, PolicyFor};

/// Print the IAM policy the people on call (or one of the functions, or a
/// node, or a drain hook: --function-arn is the drained function) need
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct IamPolicy {
    /// Whose policy
    #[arg(
        long = "for",
        value_name = "PARTY",
        default_value = "operator",
        value_parser = PossibleValuesParser::new(PolicyFor::ALL)
            .map(|name| PolicyFor::parse(&name).expect("a possible value"))
    )]
    pub(crate) policy_for: PolicyFor,
    /// The lock table (default: a placeholder)
    #[arg(long, value_name = "ARN")]
    pub(crate) table_arn: Option<String>,
    /// The API function, or with --for drain-hook the drained function (default: a placeholder)
    #[arg(long, value_name = "ARN")]
    pub(crate) function_arn: Option<String>,
}

impl IamPolicy {
    pub(crate) fn run(self, out: &mut impl Write) {
        iam_policy(
            self.policy_for,
            self.table_arn.as_deref(),
            self.function_arn.as_deref(),
            out,
        );
    }
}

/// `iam-policy`, with placeholders for the ARNs not given.
pub(crate) fn iam_policy(
    policy_for: PolicyFor,
    table_arn: Option<&str>,
    function_arn: Option<&str>,
    out: &mut impl Write,
) {
    let table = table_arn.unwrap_or("arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE");
    let function = function_arn.unwrap_or("arn:aws:lambda:REGION:ACCOUNT:function:FUNCTION");
    let policy = match policy_for {
        PolicyFor::Function => iam::function_policy(table),
        PolicyFor::Operator => iam::operator_policy(table, function),
        PolicyFor::SlotEvents => iam::slot_events_policy(
            table,
            "arn:aws:events:REGION:ACCOUNT:event-bus/BUS",
            "arn:aws:sqs:REGION:ACCOUNT:QUEUE",
        ),
        PolicyFor::AlarmPauses => {
            iam::alarm_pauses_policy(table, "arn:aws:cloudwatch:REGION:ACCOUNT:alarm:*")
        }
        PolicyFor::NodeTagging => iam::node_tagging_policy(),
        PolicyFor::Drained => iam::drained_policy(table),
        PolicyFor::DrainHook => iam::drain_hook_policy(function),
        PolicyFor::KubeAgent => iam::kube_agent_policy(table),
        PolicyFor::CheckConfig => {
            iam::check_config_policy(table, "arn:aws:cloudwatch:REGION:ACCOUNT:alarm:*")
        }
    };
    say!(out, "{policy:#}");
}
