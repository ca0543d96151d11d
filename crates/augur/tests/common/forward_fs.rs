//! A test file system that wraps another: [`forward_file_system!`] writes the methods it
//! passes through unchanged (everything but creating, appending to and opening files, which
//! such a wrapper hooks), so a test writes only the hooks. Include with
//! `#[path = "common/forward_fs.rs"] #[macro_use] mod forward_fs;`.

/// Inside `impl FileSystem for T`: forwards every method other than `create`,
/// `open_append` and `open` to the field `$inner`.
macro_rules! forward_file_system {
    ($inner:ident) => {
        fn create_dir_all(&self, dir: &std::path::Path) -> augur::Result<()> {
            self.$inner.create_dir_all(dir)
        }
        fn read_all(&self, path: &std::path::Path) -> augur::Result<Vec<u8>> {
            self.$inner.read_all(path)
        }
        fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> augur::Result<()> {
            self.$inner.rename(from, to)
        }
        fn remove(&self, path: &std::path::Path) -> augur::Result<()> {
            self.$inner.remove(path)
        }
        fn list(&self, dir: &std::path::Path) -> augur::Result<Vec<String>> {
            self.$inner.list(dir)
        }
        fn exists(&self, path: &std::path::Path) -> bool {
            self.$inner.exists(path)
        }
        fn size(&self, path: &std::path::Path) -> augur::Result<u64> {
            self.$inner.size(path)
        }
        fn sync_dir(&self, dir: &std::path::Path) -> augur::Result<()> {
            self.$inner.sync_dir(dir)
        }
        fn sync_file(&self, path: &std::path::Path) -> augur::Result<()> {
            self.$inner.sync_file(path)
        }
        fn lock(&self, path: &std::path::Path) -> augur::Result<Box<dyn augur::fs::FileLock>> {
            self.$inner.lock(path)
        }
        fn hard_link(&self, from: &std::path::Path, to: &std::path::Path) -> augur::Result<()> {
            self.$inner.hard_link(from, to)
        }
        fn rename_dir(&self, from: &std::path::Path, to: &std::path::Path) -> augur::Result<()> {
            self.$inner.rename_dir(from, to)
        }
        fn remove_dir(&self, dir: &std::path::Path) -> augur::Result<()> {
            self.$inner.remove_dir(dir)
        }
    };
}
