//! The task list the `tasks_update` tool keeps (`get_state.tasks`, the dashboard snapshot).

use std::sync::Mutex;

use dreb_protocol::RpcSessionTask;

use crate::sync::lock;

#[derive(Default)]
pub(crate) struct TaskList {
    tasks: Mutex<Vec<RpcSessionTask>>,
}

impl TaskList {
    pub(crate) fn set(&self, tasks: Vec<RpcSessionTask>) {
        *lock(&self.tasks) = tasks;
    }

    pub(crate) fn clear(&self) {
        self.set(Vec::new());
    }

    pub(crate) fn get(&self) -> Vec<RpcSessionTask> {
        lock(&self.tasks).clone()
    }
}
