# The people on call: exactly what `fleetlock status`, `release`, `forget`,
# `pause` and `resume` call (`fleetlock iam-policy`).

# For the people on call: exactly what `fleetlock status`, `release`, `forget`,
# `pause` and `resume` call (`fleetlock iam-policy`). Attach it to their role.
data "aws_iam_policy_document" "operator" {
  statement {
    sid       = "FleetLockTable"
    actions   = ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.locks.arn]
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
}

resource "aws_iam_policy" "operator" {
  name_prefix = "${local.iam_prefix}-operator-"
  path        = var.role_path
  description = "Lets the people on call run fleetlock status, release, forget, pause and resume, and read the function's configuration."
  policy      = data.aws_iam_policy_document.operator.json
  tags        = var.tags
}
