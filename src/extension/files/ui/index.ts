// The exec-server: file system and Open Remote Folder, for the activation.
export { registerFolderCommands } from './commands';
export { ExecFileSystemProvider } from './file-system-provider';
