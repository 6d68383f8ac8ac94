//! Integration tests of the dialog engine over its real frame output.

mod ask;
mod ask_user_tool;
mod blocking;
mod common;
mod permission_gate;
mod spec_frames;
