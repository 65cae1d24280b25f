//! The Lambda entry points. The handler name picks one; each reads its own
//! settings and builds its own clients.

pub mod alarm_pauses;
pub mod slot_events;
