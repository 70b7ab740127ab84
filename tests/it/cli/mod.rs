//! The binary as a user meets it: the commands end to end, progress and logging, and the
//! JPEG codec and its benchmark table.

mod codecs;
mod end_to_end;
mod progress;
