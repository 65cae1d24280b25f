# The lock table as the module made it before global tables, without a
# count: the state an upgrade starts from (upgrade.tftest.hcl).

resource "aws_dynamodb_table" "locks" {
  name                        = "fleetlock-locks"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "group"
  deletion_protection_enabled = true

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  attribute {
    name = "group"
    type = "S"
  }
}

output "table" {
  value = aws_dynamodb_table.locks
}
