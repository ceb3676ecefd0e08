// fs/readFile's answer with one copy of the file's data: the file is read into the end of a
// buffer the size of its base64 text and encoded forward in place, in 48 KiB slices (each slice's
// input is already read out into its base64 string before its output is written, and the output
// never catches up with unread input: output ends at 4/3 of the input consumed, which stays behind
// the input's start at size/3). The transport writes that buffer behind the envelope (Base64Text,
// src/rpc/verbatim.ts). Before: the file's Buffer, its base64 string and the frame, each whole.
import type { FileHandle } from 'node:fs/promises';
import { invalidRequest } from '../../protocol/errors';
import { Base64Text } from '../../rpc/verbatim';

/**
 * Input bytes encoded per slice: a multiple of 3, so only the last slice carries padding. Each
 * slice's 64 KiB base64 string is a young-generation object, gone at the next scavenge; 3 MiB
 * slices made 4 MiB large-object strings that stayed until a full collection (peak RSS of a
 * 100 MiB read: +70 MiB).
 */
const SLICE = 48 * 1024;

/**
 * The base64 text of the file behind `fh`, expected to be `size` bytes long. A file that shrank is
 * answered as read; one that grew past `size` is read whole again (as a plain read to EOF would),
 * up to `limit` bytes: a file that keeps growing (a command appending to it) is refused once it
 * passes the limit instead of being read until the reader's memory runs out.
 */
export async function readBase64(fh: FileHandle, size: number, limit = Infinity): Promise<Base64Text | string> {
  const textLength = 4 * Math.ceil(size / 3);
  const buf = Buffer.allocUnsafe(textLength);
  const start = textLength - size;
  let got = 0;
  while (got < size) {
    const { bytesRead } = await fh.read(buf, start + got, size - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  if (got === size) {
    const probe = Buffer.allocUnsafe(1);
    if ((await fh.read(probe, 0, 1, size)).bytesRead > 0) return (await readAtMost(fh, limit)).toString('base64');
  }
  for (let i = 0; i < got; i += SLICE) {
    const n = Math.min(SLICE, got - i);
    const text = buf.toString('base64', start + i, start + i + n);
    buf.write(text, (i / 3) * 4, 'latin1');
  }
  return new Base64Text(buf.subarray(0, 4 * Math.ceil(got / 3)));
}

/** The whole file from offset 0, or a refusal once more than `limit` bytes are read. */
async function readAtMost(fh: FileHandle, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(1024 * 1024);
    const { bytesRead } = await fh.read(chunk, 0, chunk.length, total);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    total += bytesRead;
    if (total > limit) throw invalidRequest(`file is too large to read: limit is ${limit} bytes (it grew while it was read)`);
    chunks.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
  }
}
