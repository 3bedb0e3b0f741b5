// Preloaded into every OpenClaw process by the peer harness (NODE_OPTIONS=--require) when a
// test asks for a later wall clock: Date reads the real time plus KURAHI_CLOCK_SHIFT_MS, so a
// daily reset boundary can pass without waiting for it. Timers and monotonic clocks are untouched.
"use strict";
const shift = Number(process.env.KURAHI_CLOCK_SHIFT_MS || 0);
if (Number.isFinite(shift) && shift !== 0) {
  const RealDate = Date;
  class ShiftedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + shift);
      else super(...args);
    }
    static now() {
      return RealDate.now() + shift;
    }
  }
  globalThis.Date = ShiftedDate;
}
