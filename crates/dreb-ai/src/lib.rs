//! Model registry, credentials and streaming LLM providers
