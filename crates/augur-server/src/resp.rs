//! Placeholder: the RESP2 codec (being written).
