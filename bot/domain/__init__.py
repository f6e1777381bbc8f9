"""Pure domain logic: no I/O, no clients, no clock. Everything here is unit-tested on its own."""
