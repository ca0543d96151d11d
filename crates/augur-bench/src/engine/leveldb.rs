//! leveldb as a peer (cargo feature `leveldb`): being written.

compile_error!("the leveldb peer is not written yet");
