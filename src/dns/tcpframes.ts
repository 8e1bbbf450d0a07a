/**
 * DNS messages over a byte stream (TCP, TLS): each message is preceded by its length in two
 * bytes (RFC 1035 §4.2.2, RFC 7766 §8). Shared by the test/probe client (client.ts) and forward's
 * TCP and TLS connections.
 */

/** `packet` with its two-byte length in front, ready to write to a stream. */
export function framed(packet: Buffer): Buffer {
  const out = Buffer.allocUnsafe(2 + packet.length);
  out.writeUInt16BE(packet.length, 0);
  packet.copy(out, 2);
  return out;
}

const EMPTY = Buffer.alloc(0);

/** Cuts the bytes a stream delivers, in chunks of any size, into whole messages. */
export class FrameReader {
  private buf: Buffer = EMPTY;

  /**
   * Take `chunk` and hand every message it completes to `onFrame`, in order. A frame is a view
   * into the received bytes: copy what is kept.
   */
  push(chunk: Buffer, onFrame: (frame: Buffer) => void): void {
    this.buf = this.buf.length > 0 ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 2) {
      const len = this.buf.readUInt16BE(0);
      if (this.buf.length < 2 + len) break;
      const frame = this.buf.subarray(2, 2 + len);
      this.buf = this.buf.subarray(2 + len);
      onFrame(frame);
    }
  }
}
