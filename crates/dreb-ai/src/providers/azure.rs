//! Azure OpenAI's Responses API (`azure-openai-responses`): the OpenAI Responses wire (`openai_responses`) at an
//! Azure resource, as the reference's provider (the `openai` SDK's Azure client) calls it: `POST
//! <base>/responses?api-version=<version>` with an `api-key` header, and the deployment's name as the model.

/// The API version sent when `AZURE_OPENAI_API_VERSION` is not set.
const DEFAULT_API_VERSION: &str = "v1";

/// Where and as what a request goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AzureTarget {
    /// `<base>/responses?api-version=<version>`.
    pub url: String,
    /// The deployment serving the model.
    pub deployment: String,
}

/// The request's target for `model_id` at `model_base_url`, from the environment as the reference reads it:
/// `AZURE_OPENAI_BASE_URL`, else `https://<AZURE_OPENAI_RESOURCE_NAME>.openai.azure.com/openai/v1`, else the model's
/// base URL; `AZURE_OPENAI_API_VERSION`; `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model=deployment,...`, else the model
/// id). The error is the reference's text.
pub(crate) fn target(
    model_id: &str,
    model_base_url: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<AzureTarget, String> {
    let set = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let base = set("AZURE_OPENAI_BASE_URL")
        .or_else(|| set("AZURE_OPENAI_RESOURCE_NAME").map(|r| format!("https://{r}.openai.azure.com/openai/v1")))
        .or_else(|| Some(model_base_url.trim().to_string()).filter(|b| !b.is_empty()))
        .ok_or(
            "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, or pass \
             azureBaseUrl, azureResourceName, or model.baseUrl.",
        )?;
    let version =
        set("AZURE_OPENAI_API_VERSION").unwrap_or_else(|| DEFAULT_API_VERSION.to_string());
    let deployment = set("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
        .and_then(|map| {
            map.split(',').find_map(|entry| {
                let (model, deployment) = entry.trim().split_once('=')?;
                (model.trim() == model_id && !deployment.trim().is_empty())
                    .then(|| deployment.trim().to_string())
            })
        })
        .unwrap_or_else(|| model_id.to_string());
    Ok(AzureTarget {
        url: format!(
            "{}/responses?api-version={}",
            base.trim_end_matches('/'),
            urlencode(&version)
        ),
        deployment,
    })
}

/// `s` safe in a query value.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_base_url_version_and_deployment_come_from_the_environment_first() {
        let t = target("gpt-5.2", "https://model.example/openai/v1", env(&[])).unwrap();
        assert_eq!(
            t.url,
            "https://model.example/openai/v1/responses?api-version=v1"
        );
        assert_eq!(t.deployment, "gpt-5.2");

        let t = target(
            "gpt-5.2",
            "https://model.example/openai/v1",
            env(&[
                ("AZURE_OPENAI_RESOURCE_NAME", "acme"),
                ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
                (
                    "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
                    "other=x, gpt-5.2 = prod-52 ,",
                ),
            ]),
        )
        .unwrap();
        assert_eq!(
            t.url,
            "https://acme.openai.azure.com/openai/v1/responses?api-version=2025-04-01-preview"
        );
        assert_eq!(t.deployment, "prod-52");

        let t = target(
            "m",
            "",
            env(&[
                ("AZURE_OPENAI_BASE_URL", " http://127.0.0.1:9/v1/ "),
                ("AZURE_OPENAI_RESOURCE_NAME", "acme"),
            ]),
        )
        .unwrap();
        assert_eq!(t.url, "http://127.0.0.1:9/v1/responses?api-version=v1");
    }

    #[test]
    fn without_a_base_url_the_reference_error() {
        let e = target("m", " ", env(&[])).unwrap_err();
        assert!(e.starts_with("Azure OpenAI base URL is required."), "{e}");
    }
}
