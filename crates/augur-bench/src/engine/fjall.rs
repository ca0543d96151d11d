//! fjall as a peer (cargo feature `fjall`): being written.

compile_error!("the fjall peer is not written yet");
