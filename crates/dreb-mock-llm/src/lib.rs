//! Test kit: a scripted mock LLM server speaking the real provider wire formats on loopback
