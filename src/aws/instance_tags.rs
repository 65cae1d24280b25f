//! Which EC2 instance sends which Zincati id: the instances that tag
//! themselves at boot (`contrib/butane/fleetlock-id-tag.bu`) with
//! [`ID_TAG`], read through the Resource Groups Tagging API (one
//! `tag:GetResources` a page, at most 20 ids a call). Never on the
//! protocol's path: only `status --hosts tags` and `hosts` ask.

use crate::aws::AwsError;
use crate::domain::hosts::{Host, HostMap};

/// The tag an instance carries with the id its Zincati sends.
pub(crate) const ID_TAG: &str = "fleetlock:zincati-id";

/// Values per tag filter: the Tagging API's limit.
const IDS_PER_CALL: usize = 20;

/// The instances tagged with these ids, and their `Name` tags.
pub(crate) async fn hosts_of(
    client: &aws_sdk_resourcegroupstagging::Client,
    ids: &[String],
) -> Result<HostMap, AwsError> {
    let mut hosts = HostMap::default();
    for chunk in ids.chunks(IDS_PER_CALL) {
        let filter = aws_sdk_resourcegroupstagging::types::TagFilter::builder()
            .key(ID_TAG)
            .set_values(Some(chunk.to_vec()))
            .build();
        let mut token: Option<String> = None;
        loop {
            let page = client
                .get_resources()
                .resource_type_filters("ec2:instance")
                .tag_filters(filter.clone())
                .set_pagination_token(token)
                .send()
                .await
                .map_err(|e| {
                    let why = aws_sdk_resourcegroupstagging::error::DisplayErrorContext(e);
                    AwsError::TagsUnread(why.to_string())
                })?;
            for mapping in page.resource_tag_mapping_list() {
                let tag = |key: &str| {
                    mapping
                        .tags()
                        .iter()
                        .find(|t| t.key() == key)
                        .map(|t| t.value().to_owned())
                };
                let Some(id) = tag(ID_TAG) else { continue };
                let instance = mapping
                    .resource_arn()
                    .and_then(|arn| arn.rsplit_once("instance/"))
                    .map(|(_, instance)| instance.to_owned());
                hosts.add(
                    id,
                    Host {
                        instance,
                        name: tag("Name"),
                        also: Vec::new(),
                    },
                );
            }
            token = page
                .pagination_token()
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            if token.is_none() {
                break;
            }
        }
    }
    Ok(hosts)
}
