//! `list_background_agents`, `steer_background_agent` and `get_background_agent_pending`.

use dreb_protocol::errors::{GetBackgroundAgentPendingError, SteerBackgroundAgentError};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use serde_json::{Value, json};

use super::NoControl;
use super::child::RequestError;
use crate::commands::{discover_agent_types, home_dir};
use crate::services::Runtime;

/// The two control commands list the same failures: one mapping per generated error type.
macro_rules! control_failures {
    ($error:ident) => {
        impl From<NoControl> for $error {
            fn from(why: NoControl) -> Self {
                match why {
                    NoControl::Unknown(agent_id) => Self::UnknownBackgroundAgent { agent_id },
                    NoControl::NoLongerRunning(agent_id) => Self::NoLongerRunning { agent_id },
                    NoControl::NotStartedYet(agent_id) => Self::NotStartedYet { agent_id },
                }
            }
        }

        impl From<RequestError> for $error {
            fn from(e: RequestError) -> Self {
                match e {
                    RequestError::ChannelUnavailable => Self::ControlChannelUnavailable,
                    RequestError::ProcessExited => Self::SubagentProcessExited,
                    RequestError::Failed(message) => Self::Failed { message },
                }
            }
        }
    };
}

control_failures!(SteerBackgroundAgentError);
control_failures!(GetBackgroundAgentPendingError);

/// The `Background agents` commands.
impl BackgroundAgentsHandler for Runtime {
    async fn list_background_agents(
        &self,
        _ctx: &RequestContext,
        _p: ListBackgroundAgentsParams,
    ) -> Result<BackgroundAgentsResult, errors::ListBackgroundAgentsError> {
        Ok(BackgroundAgentsResult {
            agents: self.background.list(),
        })
    }

    async fn steer_background_agent(
        &self,
        _ctx: &RequestContext,
        p: SteerBackgroundAgentParams,
    ) -> Result<(), SteerBackgroundAgentError> {
        if let Some(name) = crate::commands::builtin_slash_command(&p.message) {
            return Err(SteerBackgroundAgentError::BuiltinSlashCommand {
                name: name.to_string(),
            });
        }
        let control = self.background.control(&p.agent_id)?;
        control
            .request(json!({"type": "steer", "message": p.message}))
            .await?;
        Ok(())
    }

    async fn get_background_agent_pending(
        &self,
        _ctx: &RequestContext,
        p: GetBackgroundAgentPendingParams,
    ) -> Result<BackgroundAgentPendingResult, GetBackgroundAgentPendingError> {
        let control = self.background.control(&p.agent_id)?;
        let (state, pending) = tokio::join!(
            control.request(json!({"type": "get_state"})),
            control.request(json!({"type": "get_pending_messages"})),
        );
        let (state, pending) = (state?, pending?);
        // The child's answers, read as the spec's types.
        let steering_mode = state.get("steeringMode").cloned().unwrap_or(Value::Null);
        Ok(BackgroundAgentPendingResult {
            steering_mode: serde_json::from_value(steering_mode)
                .map_err(GetBackgroundAgentPendingError::unexpected)?,
            pending: serde_json::from_value(pending)
                .map_err(GetBackgroundAgentPendingError::unexpected)?,
        })
    }

    async fn list_agent_types(
        &self,
        _ctx: &RequestContext,
        _p: ListAgentTypesParams,
    ) -> Result<AgentTypesResult, errors::ListAgentTypesError> {
        use errors::ListAgentTypesError as E;
        let cwd = self.cwd.clone();
        let agents =
            tokio::task::spawn_blocking(move || discover_agent_types(home_dir().as_deref(), &cwd))
                .await
                .map_err(E::unexpected)?;
        Ok(AgentTypesResult {
            agent_types: agents
                .into_iter()
                .map(|(name, description)| RpcAgentTypeInfo { name, description })
                .collect(),
        })
    }
}
