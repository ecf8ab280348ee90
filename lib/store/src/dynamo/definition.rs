//! The table's definition, kept in one place (`infra/table.json`) and shared by
//! [`create_table`], the emulator script and (checked by a test) `template.yaml`.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    TimeToLiveSpecification,
};
use serde::Deserialize;

use crate::StoreError;

/// The definition file, compiled in.
const TABLE_JSON: &str = include_str!("../../../../infra/table.json");

/// The parts of `infra/table.json` that `CreateTable` needs.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
pub struct TableDefinition {
    /// Key attributes and their types.
    pub attribute_definitions: Vec<AttributeDef>,
    /// Partition (HASH) and sort (RANGE) keys.
    pub key_schema: Vec<KeyDef>,
    /// `PAY_PER_REQUEST` (on-demand).
    pub billing_mode: String,
    /// Which attribute holds the expiry.
    pub time_to_live_specification: TtlDef,
}

/// One key attribute.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeDef {
    /// Attribute name.
    pub attribute_name: String,
    /// `S`, `N` or `B`.
    pub attribute_type: String,
}

/// One key-schema element.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
pub struct KeyDef {
    /// Attribute name.
    pub attribute_name: String,
    /// `HASH` or `RANGE`.
    pub key_type: String,
}

/// The TTL setting.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
pub struct TtlDef {
    /// The expiry attribute.
    pub attribute_name: String,
    /// Whether TTL is on.
    pub enabled: bool,
}

impl TableDefinition {
    /// The definition in `infra/table.json`.
    pub fn load() -> Result<Self, StoreError> {
        serde_json::from_str(TABLE_JSON)
            .map_err(|e| StoreError::Backend(format!("infra/table.json is invalid: {e}")))
    }
}

/// Creates the table `name` as `infra/table.json` defines it (keys, on-demand billing) and
/// turns TTL on. An existing table is left as it is.
pub async fn create_table(client: &Client, name: &str) -> Result<(), StoreError> {
    let def = TableDefinition::load()?;
    let mut req = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::from(def.billing_mode.as_str()));
    for a in &def.attribute_definitions {
        req = req.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(&a.attribute_name)
                .attribute_type(ScalarAttributeType::from(a.attribute_type.as_str()))
                .build()
                .map_err(build)?,
        );
    }
    for k in &def.key_schema {
        req = req.key_schema(
            KeySchemaElement::builder()
                .attribute_name(&k.attribute_name)
                .key_type(KeyType::from(k.key_type.as_str()))
                .build()
                .map_err(build)?,
        );
    }
    match req.send().await {
        Ok(_) => {}
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            return Ok(());
        }
        Err(e) => {
            return Err(StoreError::Backend(format!(
                "cannot create table {name}: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            )));
        }
    }
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name(&def.time_to_live_specification.attribute_name)
                .enabled(def.time_to_live_specification.enabled)
                .build()
                .map_err(build)?,
        )
        .send()
        .await
        .map_err(|e| {
            StoreError::Backend(format!(
                "cannot enable TTL on {name}: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            ))
        })?;
    Ok(())
}

fn build(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Backend(format!("cannot build CreateTable: {e}"))
}
