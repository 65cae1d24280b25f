# A customer managed key for the lock table (table_kms_key_arn): every role
# that reads or writes the table or its stream may use it, through DynamoDB
# only. A key whose policy delegates to IAM (the default key policy) refuses
# them otherwise. The operator policy gets the same statement (operators.tf).

locals {
  # The roles that touch the table, by the feature that makes each.
  table_key_roles = var.table_kms_key_arn == null ? {} : merge(
    { function = aws_iam_role.function.id },
    var.slot_events ? { slot_events = aws_iam_role.slot_events[0].id } : {},
    local.alarm_pauses == 1 ? { alarm_pauses = aws_iam_role.alarm_pauses[0].id } : {},
    local.drained == 1 ? { drained = aws_iam_role.drained[0].id } : {},
  )
  table_key_policy = var.table_kms_key_arn == null ? null : jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid      = "TableKey"
      Effect   = "Allow"
      Action   = ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"]
      Resource = var.table_kms_key_arn
      Condition = {
        StringEquals = { "kms:ViaService" = "dynamodb.${data.aws_region.current.region}.amazonaws.com" }
      }
    }]
  })
}

resource "aws_iam_role_policy" "table_key" {
  for_each = local.table_key_roles
  name     = "fleetlock-table-key"
  role     = each.value
  policy   = local.table_key_policy
}
