// Where a terminal's parser stands after some text: in plain text ("ground") or inside an escape
// sequence (ESC …, CSI, OSC, DCS/SOS/PM/APC strings). The output coalescer appends its own
// renderer probe (ESC[5n) only at ground: text written to a terminal is cut at arbitrary places
// (PTY reads, write slices), and an ESC dropped into the middle of a child's colour or title
// sequence would abort that sequence and print the rest of it as text.
// A reduced form of the DEC/xterm parser states (vt100.net/emu/dec_ansi_parser): only the
// distinction ground / not ground matters here.

const enum S {
  Ground,
  Escape,
  EscapeIntermediate,
  Csi,
  /** OSC: ended by ST (ESC \ or 0x9c) or BEL. */
  Osc,
  /** DCS, SOS, PM, APC: ended by ST only. */
  String,
  /** ESC seen inside a string: `\` ends it (ST), anything else starts a new escape. */
  StringEscape,
}

const ESC = 0x1b;
const CAN = 0x18;
const SUB = 0x1a;
const BEL = 0x07;

export class VtState {
  private state = S.Ground;

  /** True when the text fed so far ends outside every escape sequence. */
  get ground(): boolean {
    return this.state === S.Ground;
  }

  feed(text: string): void {
    let s = this.state;
    // Fast path: plain text at ground stays at ground (no ESC, no C1 control).
    if (s === S.Ground && !/[\x1b\x80-\x9f]/.test(text)) return;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === CAN || c === SUB) {
        // Cancel any sequence (inside a string they end it too, as xterm does).
        s = S.Ground;
        continue;
      }
      switch (s) {
        case S.Ground:
          if (c === ESC) s = S.Escape;
          else if (c === 0x9b) s = S.Csi;
          else if (c === 0x9d) s = S.Osc;
          else if (c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f) s = S.String;
          break;
        case S.Escape:
          if (c === ESC) s = S.Escape;
          else if (c === 0x5b /* [ */) s = S.Csi;
          else if (c === 0x5d /* ] */) s = S.Osc;
          else if (c === 0x50 /* P */ || c === 0x58 /* X */ || c === 0x5e /* ^ */ || c === 0x5f /* _ */) s = S.String;
          else if (c >= 0x20 && c <= 0x2f) s = S.EscapeIntermediate;
          else if (c >= 0x30 && c <= 0x7e) s = S.Ground;
          // C0 controls inside an escape are executed and leave the state as it is.
          break;
        case S.EscapeIntermediate:
          if (c === ESC) s = S.Escape;
          else if (c >= 0x30 && c <= 0x7e) s = S.Ground;
          break;
        case S.Csi:
          if (c === ESC) s = S.Escape;
          else if (c >= 0x40 && c <= 0x7e) s = S.Ground;
          break;
        case S.Osc:
          if (c === ESC) s = S.StringEscape;
          else if (c === 0x9c || c === BEL) s = S.Ground;
          break;
        case S.String:
          if (c === ESC) s = S.StringEscape;
          else if (c === 0x9c) s = S.Ground;
          break;
        case S.StringEscape:
          if (c === 0x5c /* \ */) s = S.Ground;
          else if (c === ESC) s = S.Escape;
          else if (c === 0x5b) s = S.Csi;
          else if (c === 0x5d) s = S.Osc;
          else if (c === 0x50 || c === 0x58 || c === 0x5e || c === 0x5f) s = S.String;
          else if (c >= 0x20 && c <= 0x2f) s = S.EscapeIntermediate;
          else s = S.Ground;
          break;
      }
    }
    this.state = s;
  }
}
