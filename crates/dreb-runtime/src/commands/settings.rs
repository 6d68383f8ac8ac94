//! Persistent settings, context trust, and the auto-compaction / auto-retry switches.

use std::sync::Arc;

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_settings::SettingsManager;
use serde_json::Value;

use crate::catalog::RegistryCatalog;
use crate::convert::wire;
use crate::services::Runtime;

/// A context-trust `path` param is raw JSON (`raw: true` in rpc.yaml) so that `null`, numbers or objects get the
/// reference's validation text rather than a decoding error; absent reads as `null`.
fn raw_path(path: Option<Value>) -> Value {
    path.unwrap_or(Value::Null)
}

/// A settings snapshot with every value settings.json holds outside the spec's enums (a misspelled thinking level,
/// say, which the reference's own setters can write) replaced by what the runtime uses instead: absent for the
/// optional `defaultThinkingLevel` and `transport`, `one-at-a-time` for the queue modes. One bad value on disk never
/// breaks reading or writing the rest; the file keeps what it holds.
fn effective_values(snapshot: &mut Value) {
    fn valid<T: serde::de::DeserializeOwned>(v: &Value) -> bool {
        T::deserialize(v).is_ok()
    }
    let Some(obj) = snapshot.as_object_mut() else {
        return;
    };
    let checks: [(&str, fn(&Value) -> bool, Option<&str>); 4] = [
        ("defaultThinkingLevel", valid::<ThinkingLevel>, None),
        ("transport", valid::<Transport>, None),
        ("steeringMode", valid::<QueueMode>, Some("one-at-a-time")),
        ("followUpMode", valid::<QueueMode>, Some("one-at-a-time")),
    ];
    for (key, is_valid, fallback) in checks {
        let Some(value) = obj.get(key) else { continue };
        if is_valid(value) {
            continue;
        }
        tracing::warn!(%key, %value, "settings.json holds a value outside the protocol's range; reporting the one in effect");
        match fallback {
            Some(effective) => {
                obj.insert(key.to_string(), Value::from(effective));
            }
            None => {
                obj.shift_remove(key);
            }
        }
    }
}

/// Run a settings RPC operation off the async threads with a catalog of the available models. The operation
/// fails with the command's generated error (its text is rpc.yaml's); the blocking task's failure and the
/// conversion to the wire type are `unexpected`.
async fn settings_op<T, U, E>(
    rt: &Runtime,
    op: impl FnOnce(&SettingsManager, &RegistryCatalog) -> Result<T, E> + Send + 'static,
    unexpected: fn(String) -> E,
) -> Result<U, E>
where
    T: serde::Serialize + Send + 'static,
    U: serde::de::DeserializeOwned,
    E: Send + 'static,
{
    let catalog = {
        let registry = rt.models.registry();
        RegistryCatalog::new(&registry)
    };
    let settings: Arc<SettingsManager> = rt.settings.manager().clone();
    let result = tokio::task::spawn_blocking(move || op(&settings, &catalog))
        .await
        .map_err(|e| unexpected(e.to_string()))??;
    let mut value = wire::<_, Value>(&result).map_err(unexpected)?;
    effective_values(&mut value);
    if let Some(snapshot) = value.get_mut("settings") {
        effective_values(snapshot);
    }
    wire(&value).map_err(unexpected)
}

/// The `Settings` commands.
impl SettingsHandler for Runtime {
    async fn get_settings(
        &self,
        _ctx: &RequestContext,
        _p: GetSettingsParams,
    ) -> Result<RpcSettingsSnapshot, errors::GetSettingsError> {
        settings_op(
            self,
            |s, c| s.get_settings(c),
            errors::GetSettingsError::Unexpected,
        )
        .await
    }

    async fn set_settings(
        &self,
        _ctx: &RequestContext,
        p: SetSettingsParams,
    ) -> Result<RpcSettingsSetResult, errors::SetSettingsError> {
        // `settings` is raw JSON (`raw: true` in rpc.yaml): dreb-settings validates it with the reference's texts.
        let update = p.settings;
        let result: RpcSettingsSetResult = settings_op(
            self,
            move |s, c| s.apply_update(update.as_ref(), c),
            errors::SetSettingsError::Unexpected,
        )
        .await?;
        // The live switches follow the persisted defaults only where the reference's set_settings does not:
        // set_settings changes defaults, not the running session.
        Ok(result)
    }
}

/// The `Context trust` commands.
impl ContextTrustHandler for Runtime {
    async fn evaluate_context_trust(
        &self,
        _ctx: &RequestContext,
        p: EvaluateContextTrustParams,
    ) -> Result<RpcContextTrustEvaluation, errors::EvaluateContextTrustError> {
        let path = raw_path(p.path);
        settings_op(
            self,
            move |s, _| s.evaluate_context_trust(&path),
            errors::EvaluateContextTrustError::Unexpected,
        )
        .await
    }

    async fn trust_context_folder(
        &self,
        _ctx: &RequestContext,
        p: TrustContextFolderParams,
    ) -> Result<RpcContextTrustMutationResult, errors::TrustContextFolderError> {
        let path = raw_path(p.path);
        settings_op(
            self,
            move |s, c| s.trust_context_folder(&path, c),
            errors::TrustContextFolderError::Unexpected,
        )
        .await
    }

    async fn untrust_context_folder(
        &self,
        _ctx: &RequestContext,
        p: UntrustContextFolderParams,
    ) -> Result<RpcContextTrustMutationResult, errors::UntrustContextFolderError> {
        let path = raw_path(p.path);
        settings_op(
            self,
            move |s, c| s.untrust_context_folder(&path, c),
            errors::UntrustContextFolderError::Unexpected,
        )
        .await
    }

    async fn remove_trusted_context_folder(
        &self,
        _ctx: &RequestContext,
        p: RemoveTrustedContextFolderParams,
    ) -> Result<RpcTrustedFolderRemovalResult, errors::RemoveTrustedContextFolderError> {
        let path = raw_path(p.path);
        settings_op(
            self,
            move |s, c| s.remove_trusted_context_folder(&path, c),
            errors::RemoveTrustedContextFolderError::Unexpected,
        )
        .await
    }
}
