// A setup step that will not go ahead (unparseable file, an m4a entry someone else wrote):
// exit code 1, and nothing has been written anywhere when it is thrown.
export class Refusal extends Error {
  constructor(
    message: string,
    readonly file?: string,
    /** The --json error code: `refused`, or a narrower one (symlink_refused, outside_project). */
    readonly code = 'refused',
  ) {
    super(message);
    this.name = 'Refusal';
  }
}
