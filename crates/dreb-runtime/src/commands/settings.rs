//! Persistent settings, context trust, and the auto-compaction / auto-retry switches.

use std::sync::Arc;

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_settings::SettingsManager;
use serde_json::Value;

use crate::catalog::RegistryCatalog;
use crate::services::Runtime;

/// A context-trust `path` param is raw JSON (`raw: true` in rpc.yaml) so that `null`, numbers or objects get the
/// reference's validation text rather than a decoding error; absent reads as `null`.
fn raw_path(path: Option<Value>) -> Value {
    path.unwrap_or(Value::Null)
}

/// Run a settings RPC operation off the async threads with a catalog of the available models. `dreb-settings`
/// answers in the spec's types and fails with the command's generated error (its text is rpc.yaml's); a failed
/// blocking task is `unexpected`.
async fn settings_op<T, E>(
    rt: &Runtime,
    op: impl FnOnce(&SettingsManager, &RegistryCatalog) -> Result<T, E> + Send + 'static,
    unexpected: fn(String) -> E,
) -> Result<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    let catalog = {
        let registry = rt.models.registry();
        RegistryCatalog::new(&registry)
    };
    let settings: Arc<SettingsManager> = rt.settings.manager().clone();
    tokio::task::spawn_blocking(move || op(&settings, &catalog))
        .await
        .map_err(|e| unexpected(e.to_string()))?
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
        // set_settings changes the persisted defaults, not the running session (as the reference's).
        settings_op(
            self,
            move |s, c| s.apply_update(update.as_ref(), c),
            errors::SetSettingsError::Unexpected,
        )
        .await
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
