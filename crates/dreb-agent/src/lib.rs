//! The agent loop: turns, tool execution, steering and follow-up queues, retries
