# Where every alarm goes: var.alarm_topic_arn, or this topic (the SAM
# template's AlarmTopic and AlarmEmailSubscription).

locals {
  create_alarm_topic = var.alarm_topic_arn == null
}

# Not encrypted: CloudWatch cannot publish to a topic under the AWS managed SNS
# key, and a customer managed key (with a key policy for CloudWatch) costs $1 a
# month for notifications that carry alarm names and metric values only.
resource "aws_sns_topic" "alarms" {
  count             = local.create_alarm_topic ? 1 : 0
  name              = "${var.name}-alarms"
  display_name      = "FleetLock alarms"
  kms_master_key_id = var.topic_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_26: CloudWatch cannot publish to a topic encrypted with the AWS managed key; the messages are alarm names and metric values, not worth a customer managed key and its key policy.
}

# Terraform cannot delete an email subscription that was never confirmed: it
# stays "pending confirmation" until AWS drops it after 3 days.
resource "aws_sns_topic_subscription" "alarm_email" {
  count     = local.create_alarm_topic && var.alarm_email != null ? 1 : 0
  topic_arn = aws_sns_topic.alarms[0].arn
  protocol  = "email"
  endpoint  = var.alarm_email
}
