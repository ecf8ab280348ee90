//! The stage's AWS side: its own moto (via `infra/emulator.sh`, with the SQS deduplication
//! window shortened so a late duplicate does not take five minutes), the table, the turn queue
//! and its dead-letter queue as `template.yaml` defines them, and the people's accounts with
//! their Telegram identities bound.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, bail};
use aws_sdk_sqs::types::QueueAttributeName;
use steward_harness::{ChannelIdentity, UserId, accounts, identity};
use steward_store::{DynamoTable, SystemClock, Table};

use crate::template::Template;

/// The moto emulator this run started; stopped on drop.
pub struct Moto {
    /// Its base URL.
    pub url: String,
    root: PathBuf,
    state: PathBuf,
}

impl Moto {
    /// Starts moto with SQS deduplication ids remembered for `dedupe_window_secs`.
    pub fn start(root: &Path, state: &Path, dedupe_window_secs: u64) -> anyhow::Result<Self> {
        let out = Command::new(root.join("infra/emulator.sh"))
            .arg("start")
            .current_dir(root)
            .env("STEWARD_EMULATOR_DIR", state)
            .env(
                "STEWARD_MOTO_SQS_DEDUPE_SECONDS",
                dedupe_window_secs.to_string(),
            )
            .output()
            .context("the AWS emulator (infra/emulator.sh) could not be run")?;
        if !out.status.success() {
            bail!(
                "the AWS emulator (moto) did not start: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok(Self {
            url,
            root: root.to_owned(),
            state: state.to_owned(),
        })
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = Command::new(self.root.join("infra/emulator.sh"))
            .arg("stop")
            .current_dir(&self.root)
            .env("STEWARD_EMULATOR_DIR", &self.state)
            .status();
    }
}

/// An SDK configuration for `endpoint` with test credentials.
pub async fn sdk(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(steward_net::sdk_http_client())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("eu-west-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "stage", "stage", None, None, "stage",
        ))
        .load()
        .await
}

/// The AWS resources of one run.
pub struct Resources {
    /// The table's name.
    pub table_name: String,
    /// The table, read directly (not through the fault proxy) for the figures.
    pub table: Arc<dyn Table>,
    /// The turn queue's URL.
    pub queue_url: String,
    /// The turn queue's ARN.
    pub queue_arn: String,
    /// The dead-letter queue's URL.
    pub dlq_url: String,
    /// A direct SQS client (the event source mapping's own, never throttled by the stage).
    pub sqs: aws_sdk_sqs::Client,
    /// The media bucket's name (the template's `MediaBucket`, passed to the agent).
    pub bucket: String,
}

/// Creates the table, both queues and the media bucket as the template defines them.
pub async fn resources(
    sdk: &aws_config::SdkConfig,
    template: &Template,
) -> anyhow::Result<Resources> {
    let table_name = "stage-table".to_owned();
    let dynamo = aws_sdk_dynamodb::Client::new(sdk);
    steward_store::create_table(&dynamo, &table_name)
        .await
        .context("creating the table")?;
    let sqs = aws_sdk_sqs::Client::new(sdk);
    let dlq = sqs
        .create_queue()
        .queue_name("stage-dlq.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "false")
        .send()
        .await
        .context("creating the dead-letter queue")?;
    let dlq_url = dlq.queue_url().unwrap_or_default().to_owned();
    let dlq_arn = queue_arn(&sqs, &dlq_url).await?;
    let redrive = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": template.max_receive_count,
    });
    let queue = sqs
        .create_queue()
        .queue_name("stage-turns.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "false")
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            template.visibility_timeout_secs.to_string(),
        )
        .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
        .send()
        .await
        .context("creating the turn queue")?;
    let queue_url = queue.queue_url().unwrap_or_default().to_owned();
    let queue_arn = queue_arn(&sqs, &queue_url).await?;
    let bucket = "stage-media".to_owned();
    // Outside us-east-1, S3 wants the bucket's region named.
    let region = sdk.region().map_or("us-east-1", |r| r.as_ref());
    let mut create = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(true)
            .build(),
    )
    .create_bucket()
    .bucket(&bucket);
    if region != "us-east-1" {
        create = create.create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::from(region))
                .build(),
        );
    }
    create.send().await.context("creating the media bucket")?;
    let table: Arc<dyn Table> = Arc::new(DynamoTable::new(dynamo, table_name.clone()));
    Ok(Resources {
        bucket,
        table_name,
        table,
        queue_url,
        queue_arn,
        dlq_url,
        sqs,
    })
}

async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<String> {
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .context("reading a queue's ARN")?;
    attrs
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .context("a queue without an ARN")
}

/// Messages visible plus in flight in `url`.
pub async fn queue_depth(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<u64> {
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .context("reading a queue's depth")?;
    let get = |n: QueueAttributeName| -> u64 {
        attrs
            .attributes()
            .and_then(|a| a.get(&n))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok(get(QueueAttributeName::ApproximateNumberOfMessages)
        + get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
}

/// The account of person `i`, bound to Telegram user `chat`.
pub async fn person(table: &dyn Table, i: usize, chat: i64) -> anyhow::Result<UserId> {
    let user = UserId::parse(&format!("stage{i:04}")).context("a stage user id")?;
    accounts::create_account_with_id(
        table,
        &SystemClock,
        user.clone(),
        &format!("Person {i}"),
        Some("Europe/Berlin"),
    )
    .await
    .with_context(|| format!("creating account {user}"))?;
    let ident = ChannelIdentity::parse("tg", &chat.to_string()).context("a Telegram identity")?;
    identity::bind(table, &SystemClock, &ident, &user)
        .await
        .with_context(|| format!("binding Telegram {chat} to {user}"))?;
    Ok(user)
}
