# The private endpoint switched on, for checkov: with the defaults it leaves
# out what its count switches off.
endpoint                   = "private_rest_api"
private_vpc_id             = "vpc-0123456789abcdef0"
private_subnet_ids         = ["subnet-0aaaaaaaaaaaaaaaa"]
private_security_group_ids = ["sg-0cccccccccccccccc"]
private_api_access_log     = true
