// The processes this window shows and the records that let terminals survive a reload.
export { ProcessRegistry } from './process-registry';
export { TerminalRecords } from './survival';
