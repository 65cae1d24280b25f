# For the people on call: exactly what `fleetlock status`, `release`,
# `drained`, `returned`, `forget`, `pause`, `resume`, `exclude`, `include` and `hosts`
# call (`fleetlock iam-policy`). Attach it to their role.
data "aws_iam_policy_document" "operator" {
  statement {
    sid       = "FleetLockTable"
    actions   = ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = [local.table_arn]
  }

  statement {
    sid       = "FleetLockConfiguration"
    actions   = ["lambda:GetFunctionConfiguration"]
    resources = [aws_lambda_function.this.arn]
  }

  # `status --hosts tags`: the instance behind an id, by its tag. The
  # Tagging API has no resource-level permissions.
  statement {
    sid       = "InstanceHosts"
    actions   = ["tag:GetResources"]
    resources = ["*"]
  }

  # A customer managed table key (table_key.tf): its use through DynamoDB only.
  source_policy_documents = local.table_key_policy == null ? [] : [local.table_key_policy]
}

resource "aws_iam_policy" "operator" {
  name_prefix = "${local.iam_prefix}-operator-"
  path        = var.role_path
  description = "Lets the people on call run fleetlock status, release, drained, returned, forget, pause, resume, exclude, include and hosts on the lock table, and read the function's configuration."
  policy      = data.aws_iam_policy_document.operator.json
  tags        = var.tags
}

# For fleetlock-kube-agent (docs/kubernetes.md): it reads the groups and
# confirms drains and returns (`fleetlock iam-policy --for kube-agent`).
# Attach it to the role its pods take (EKS Pod Identity or IRSA).
data "aws_iam_policy_document" "kube_agent" {
  statement {
    sid       = "FleetLockTable"
    actions   = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    resources = [local.table_arn]
  }

  # A customer managed table key (table_key.tf): its use through DynamoDB only.
  source_policy_documents = local.table_key_policy == null ? [] : [local.table_key_policy]
}

resource "aws_iam_policy" "kube_agent" {
  name_prefix = "${local.iam_prefix}-kube-agent-"
  path        = var.role_path
  description = "Lets fleetlock-kube-agent read the lock table's groups and confirm the drains and returns of the nodes of a Kubernetes cluster."
  policy      = data.aws_iam_policy_document.kube_agent.json
  tags        = var.tags
}
