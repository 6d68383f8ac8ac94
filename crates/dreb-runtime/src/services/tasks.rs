//! The task list the `tasks_update` tool keeps (`get_state.tasks`, the dashboard snapshot).

use std::sync::Mutex;

use serde_json::Value;

use crate::sync::lock;

pub(crate) struct TaskList {
    tasks: Mutex<Value>,
}

impl Default for TaskList {
    fn default() -> Self {
        TaskList {
            tasks: Mutex::new(Value::Array(Vec::new())),
        }
    }
}

impl TaskList {
    pub(crate) fn set(&self, tasks: Value) {
        *lock(&self.tasks) = tasks;
    }

    pub(crate) fn clear(&self) {
        self.set(Value::Array(Vec::new()));
    }

    /// Read the list in place (no copy), e.g. to deserialize it.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&Value) -> T) -> T {
        f(&lock(&self.tasks))
    }
}
