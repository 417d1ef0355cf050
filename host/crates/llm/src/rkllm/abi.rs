//! Which RKLLM release a library is, which struct layout that means, and the calls whose structs
//! differ between layouts.
//!
//! The policy is data: [`RELEASES`] lists every release whose `rkllm.h` was compared with
//! `rkllm/rkllm.h` (the layout facts are in `tests/rkllm_ffi/layout.rs`), and [`choose`] turns
//! what a library shows — the version string it carries, the optional symbols it exports — into a
//! layout or a [`Refusal`]. One module per layout (`v1_2_0`, `v1_2_1`, `v1_3_0`) states its
//! `#[repr(C)]` types and converts rkmcp's own `InitParams` / `RunInput` / `ResultView` at the
//! boundary ([`Layout`]); [`Calls`] makes the calls alike for every layout, so the backend sees
//! one set of types whatever the release.
use std::ffi::{CStr, c_char, c_int, c_void};

use crate::config::AbiSetting;
use crate::sys;

/// The struct layouts rkmcp supports, each named after the first release that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Abi {
    /// Release 1.2.0: `RKLLMInput` starts with the input type; void result callback; no perf.
    #[serde(rename = "1.2.0")]
    V1_2_0,
    /// Releases 1.2.1–1.2.3: `role` and `enable_thinking` lead `RKLLMInput`; perf statistics.
    #[serde(rename = "1.2.1")]
    V1_2_1,
    /// Release 1.3.0: `rkllm_init` takes an `RKLLMCallback` struct; per-run sampling.
    #[serde(rename = "1.3.0")]
    V1_3_0,
}

impl Abi {
    pub const ALL: [Abi; 3] = [Abi::V1_2_0, Abi::V1_2_1, Abi::V1_3_0];

    /// The releases that share this layout, for people.
    pub fn releases(self) -> &'static str {
        match self {
            Abi::V1_2_0 => "1.2.0",
            Abi::V1_2_1 => "1.2.1–1.2.3",
            Abi::V1_3_0 => "1.3.0",
        }
    }

    /// Whether `RKLLMInput` carries the role and the thinking switch (1.2.0 does not: its runtime
    /// wraps every prompt as a user turn).
    pub fn has_role(self) -> bool {
        self != Abi::V1_2_0
    }

    /// Whether the final result callback carries the runtime's performance statistics.
    pub fn has_perf(self) -> bool {
        self != Abi::V1_2_0
    }
}

impl std::fmt::Display for Abi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Abi::V1_2_0 => "1.2.0",
            Abi::V1_2_1 => "1.2.1",
            Abi::V1_3_0 => "1.3.0",
        })
    }
}

/// Every release whose header was compared, and its layout. 1.2.1 changed the layout in a patch
/// release, so a version not listed here is refused rather than guessed.
pub const RELEASES: [(&str, Abi); 5] = [
    ("1.2.0", Abi::V1_2_0),
    ("1.2.1", Abi::V1_2_1),
    ("1.2.2", Abi::V1_2_1),
    ("1.2.3", Abi::V1_2_1),
    ("1.3.0", Abi::V1_3_0),
];

/// What to install when the runtime found cannot be used.
pub const INSTALL_HINT: &str = "Install librkllmrt.so of rknn-llm release 1.3.0 (or 1.2.0–1.2.3) from \
https://github.com/airockchip/rknn-llm (rkllm-runtime/Linux/librkllm_api/aarch64/) to /usr/lib, or point rkmcp \
at it with --rkllm-lib, RKLLM_LIB or model.rkllm_lib";

/// The layout of a release listed in [`RELEASES`]. `version` is `X.Y.Z`, possibly with a suffix
/// such as `b1` (a beta of that release).
pub fn release_layout(version: &str) -> Option<Abi> {
    let (major, minor, patch) = parse_version(version)?;
    RELEASES
        .iter()
        .find(|(v, _)| parse_version(v) == Some((major, minor, patch)))
        .map(|(_, abi)| *abi)
}

/// `X.Y.Z` at the start of `version` (anything after the third number is ignored).
pub fn parse_version(version: &str) -> Option<(u32, u32, u32)> {
    let mut parts = version.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let patch = rest[..digits].parse().ok()?;
    Some((major, minor, patch))
}

/// Optional symbols whose presence tells releases apart (no release exports a version function).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Symbols {
    /// `rkllm_set_chat_template`: since 1.2.0.
    pub set_chat_template: bool,
    /// `rkllm_set_function_tools` (with `rkllm_get_kv_cache_size`): since 1.2.1.
    pub set_function_tools: bool,
}

/// Why a library is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 1.0.x/1.1.x: different structs (no `n_keep`, no chat template API). `None`: no version
    /// string, and no `rkllm_set_chat_template` either.
    TooOld(Option<String>),
    /// A version whose header rkmcp has not compared.
    Unknown(String),
    /// The version string and the exported symbols disagree.
    Conflict { version: String, abi: Abi },
    /// No version string, and the symbols fit more than one layout (1.2.1–1.3.0 export the same).
    Ambiguous,
}

impl Refusal {
    /// The explanation, naming `path`, the version found and what to do.
    pub fn message(&self, path: &std::path::Path) -> String {
        let path = path.display();
        let known = "rkmcp has checked the struct layouts of releases 1.2.0, 1.2.1–1.2.3 and 1.3.0";
        match self {
            Refusal::TooOld(Some(v)) => format!(
                "{path} is RKLLM runtime {v}, older than 1.2.0, whose structs differ from what rkmcp passes. \
                 {INSTALL_HINT}"
            ),
            Refusal::TooOld(None) => format!(
                "{path} does not export rkllm_set_chat_template, so it is an RKLLM runtime older than 1.2.0 \
                 (and carries no version string); its structs differ from what rkmcp passes. {INSTALL_HINT}"
            ),
            Refusal::Unknown(v) => format!(
                "{path} is RKLLM runtime {v}; {known}, and a wrong layout crashes (1.2.1 changed it in a \
                 patch release). {INSTALL_HINT}. If you know {v} keeps the layout of 1.3.0 (or 1.2.x), set \
                 model.rkllm_abi = \"1.3\" (or \"1.2\")"
            ),
            Refusal::Conflict { version, abi } => format!(
                "{path} says it is RKLLM runtime {version} but {}; the file may be patched or \
                 mislabelled, and its struct layout cannot be trusted. {INSTALL_HINT}, or set \
                 model.rkllm_abi if you know its layout",
                if abi.has_role() {
                    "does not export rkllm_set_function_tools, which every release since 1.2.1 has"
                } else {
                    "exports rkllm_set_function_tools, which 1.2.0 does not have"
                },
            ),
            Refusal::Ambiguous => format!(
                "cannot tell which RKLLM release {path} is: it carries no `rkllm-runtime version` string and \
                 exports the functions of 1.2.1–1.3.0, whose structs differ. Set model.rkllm_abi = \"1.3\" or \
                 \"1.2\" (or --rkllm-abi) to the release you installed"
            ),
        }
    }
}

/// The layout to use, from the configured setting, the version string in the file (if any) and
/// the optional symbols it exports.
pub fn choose(
    setting: AbiSetting,
    version: Option<&str>,
    symbols: Symbols,
) -> Result<Abi, Refusal> {
    // Within 1.2.x the symbols tell 1.2.0 from the later releases, so "1.2" needs no more.
    let by_symbols_1_2 = if symbols.set_function_tools {
        Abi::V1_2_1
    } else {
        Abi::V1_2_0
    };
    match setting {
        AbiSetting::V1_2 => return Ok(by_symbols_1_2),
        AbiSetting::V1_3 => return Ok(Abi::V1_3_0),
        AbiSetting::Auto => {}
    }
    let Some(version) = version else {
        return match (symbols.set_chat_template, symbols.set_function_tools) {
            (_, true) => Err(Refusal::Ambiguous),
            (true, false) => Ok(Abi::V1_2_0),
            (false, false) => Err(Refusal::TooOld(None)),
        };
    };
    match (release_layout(version), parse_version(version)) {
        (Some(abi), _) => {
            // 1.2.1 and later export rkllm_set_function_tools; 1.2.0 does not.
            if symbols.set_function_tools == abi.has_role() {
                Ok(abi)
            } else {
                Err(Refusal::Conflict {
                    version: version.to_string(),
                    abi,
                })
            }
        }
        (None, Some((major, minor, _))) if (major, minor) < (1, 2) => {
            Err(Refusal::TooOld(Some(version.to_string())))
        }
        (None, _) => Err(Refusal::Unknown(version.to_string())),
    }
}

/// What rkmcp asks of `rkllm_init`, whatever the layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InitParams<'a> {
    pub model_path: &'a CStr,
    pub max_context_len: i32,
    pub max_new_tokens: i32,
    pub top_k: i32,
    pub top_p: f32,
    pub temperature: f32,
    pub repeat_penalty: f32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
}

/// One prompt for `rkllm_run`, whatever the layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunInput<'a> {
    pub role: &'a CStr,
    pub enable_thinking: bool,
    pub prompt: &'a CStr,
    pub keep_history: c_int,
    pub max_new_tokens: i32,
}

/// One result callback's content, whatever the layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResultView<'a> {
    pub text: &'a [u8],
    /// Only the layouts with [`Abi::has_perf`] report it.
    pub perf: Option<sys::RKLLMPerfStat>,
}

/// Receives the result callbacks of a run. A trait (not a function pointer) so each layout's
/// `extern "C"` trampoline is a monomorphised function that needs no state of its own.
pub(crate) trait ResultSink {
    /// # Safety
    /// `userdata` is what was passed to `rkllm_run`; the callee defines what it must point to.
    unsafe fn on_result(
        userdata: *mut c_void,
        result: Option<ResultView<'_>>,
        state: sys::LLMCallState,
    );
}

/// Copies the fields every layout's `RKLLMParam` shares.
macro_rules! fill_param {
    ($param:expr, $p:expr) => {{
        let (param, p) = (&mut $param, $p);
        param.model_path = p.model_path.as_ptr();
        param.max_context_len = p.max_context_len;
        param.max_new_tokens = p.max_new_tokens;
        param.top_k = p.top_k;
        param.top_p = p.top_p;
        param.temperature = p.temperature;
        param.repeat_penalty = p.repeat_penalty;
        param.frequency_penalty = p.frequency_penalty;
        param.presence_penalty = p.presence_penalty;
        param.skip_special_token = true;
        param.is_async = false;
    }};
}

pub(crate) mod v1_2_0;
pub(crate) mod v1_2_1;
pub(crate) mod v1_3_0;

/// # Safety
/// `T` must be the type of the symbol `name` in `lib`.
unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    // SAFETY: per the caller.
    unsafe { lib.get::<T>(name.as_bytes()).ok().map(|s| *s) }
}

/// The text of a result: the runtime owns it for the duration of the callback.
///
/// # Safety
/// `text` is null or a NUL-terminated string that outlives `'a`.
unsafe fn text_bytes<'a>(text: *const c_char) -> &'a [u8] {
    if text.is_null() {
        &[]
    } else {
        // SAFETY: per the caller.
        unsafe { CStr::from_ptr(text) }.to_bytes()
    }
}

/// The result callback of the layouts whose `RKLLMResult` carries `perf` (1.2.1 and 1.3.0).
unsafe extern "C" fn result_callback<S: ResultSink>(
    result: *mut sys::RKLLMResult,
    userdata: *mut c_void,
    state: sys::LLMCallState,
) -> c_int {
    // SAFETY: the runtime passes a valid result (or null) for the duration of the call.
    let view = unsafe { result.as_ref() }.map(|r| ResultView {
        // SAFETY: `text` is owned by the runtime during the call.
        text: unsafe { text_bytes(r.text) },
        perf: Some(r.perf),
    });
    // SAFETY: userdata is what rkmcp passed to rkllm_run.
    unsafe { S::on_result(userdata, view, state) };
    sys::RKLLM_CALLBACK_CONTINUE as c_int
}

/// What one layout states: the types of the calls whose structs differ, and how rkmcp's own
/// types become them. [`Calls`] makes the calls, the same way for every layout.
pub(crate) trait Layout {
    /// `RKLLMParam`, as `rkllm_createDefaultParam` returns it.
    type Param;
    /// The result-callback argument of `rkllm_init`.
    type Callback;
    /// `RKLLMInput`.
    type Input;
    /// `RKLLMInferParam`.
    type Infer;
    /// `rkllm_clear_kv_cache`, whose arguments changed.
    type ClearKvCache: Copy;

    /// The fields of `params` set on the library's defaults.
    fn fill(param: &mut Self::Param, params: &InitParams<'_>);

    /// The callback argument that sends results to `S`, and what must outlive the handle.
    fn callback<S: ResultSink>() -> (Self::Callback, KeepAlive);

    fn input(input: &RunInput<'_>) -> Self::Input;

    fn infer(input: &RunInput<'_>) -> Self::Infer;

    /// Clears the whole cache with `f`.
    ///
    /// # Safety
    /// A live handle.
    unsafe fn clear(f: Self::ClearKvCache, handle: sys::LLMHandle, keep: c_int) -> c_int;
}

/// One layout's functions, resolved from a library.
pub(crate) struct Calls<L: Layout> {
    create_default: unsafe extern "C" fn() -> L::Param,
    init: unsafe extern "C" fn(*mut sys::LLMHandle, *mut L::Param, L::Callback) -> c_int,
    run: unsafe extern "C" fn(sys::LLMHandle, *mut L::Input, *mut L::Infer, *mut c_void) -> c_int,
    clear_kv_cache: Option<L::ClearKvCache>,
}

impl<L: Layout> Calls<L> {
    /// # Safety
    /// `lib` has layout `L`.
    unsafe fn resolve(lib: &libloading::Library) -> Result<Self, &'static str> {
        // SAFETY: the types are this layout's, per the caller.
        unsafe {
            Ok(Self {
                create_default: sym(lib, "rkllm_createDefaultParam")
                    .ok_or("rkllm_createDefaultParam")?,
                init: sym(lib, "rkllm_init").ok_or("rkllm_init")?,
                run: sym(lib, "rkllm_run").ok_or("rkllm_run")?,
                clear_kv_cache: sym(lib, "rkllm_clear_kv_cache"),
            })
        }
    }

    /// # Safety
    /// See [`Functions::init`].
    unsafe fn init<S: ResultSink>(
        &self,
        params: &InitParams<'_>,
        handle: &mut sys::LLMHandle,
    ) -> (c_int, KeepAlive) {
        let (callback, keep_alive) = L::callback::<S>();
        // SAFETY: the defaults come from the library itself; `params` outlives the call and what
        // the callback points to outlives the handle (the caller keeps it).
        let rc = unsafe {
            let mut param = (self.create_default)();
            L::fill(&mut param, params);
            (self.init)(handle, &mut param, callback)
        };
        (rc, keep_alive)
    }

    /// # Safety
    /// See [`Functions::run`].
    unsafe fn run(
        &self,
        handle: sys::LLMHandle,
        input: &RunInput<'_>,
        userdata: *mut c_void,
    ) -> c_int {
        let mut rk_input = L::input(input);
        let mut infer = L::infer(input);
        // SAFETY: the structs and strings outlive the synchronous call.
        unsafe { (self.run)(handle, &mut rk_input, &mut infer, userdata) }
    }

    /// # Safety
    /// A live handle.
    unsafe fn clear_kv_cache(&self, handle: sys::LLMHandle, keep: c_int) -> Option<c_int> {
        // SAFETY: per the caller.
        self.clear_kv_cache
            .map(|f| unsafe { L::clear(f, handle, keep) })
    }
}

/// The functions whose signatures differ between layouts, resolved for one.
pub(crate) enum Functions {
    V1_2_0(Calls<v1_2_0::V1_2_0>),
    V1_2_1(Calls<v1_2_1::V1_2_1>),
    V1_3_0(Calls<v1_3_0::V1_3_0>),
}

/// Keeps what `rkllm_init` may hold on to alive as long as the handle (1.3.0 keeps a pointer to
/// its `RKLLMCallback`).
pub(crate) type KeepAlive = Option<Box<sys::RKLLMCallback>>;

impl Functions {
    /// Looks up the layout-specific functions; the error names a missing symbol.
    ///
    /// # Safety
    /// `lib` must have the layout `abi` (what [`choose`] is for).
    pub(crate) unsafe fn resolve(
        abi: Abi,
        lib: &libloading::Library,
    ) -> Result<Self, &'static str> {
        // SAFETY: per the caller.
        unsafe {
            Ok(match abi {
                Abi::V1_2_0 => Functions::V1_2_0(Calls::resolve(lib)?),
                Abi::V1_2_1 => Functions::V1_2_1(Calls::resolve(lib)?),
                Abi::V1_3_0 => Functions::V1_3_0(Calls::resolve(lib)?),
            })
        }
    }

    /// `rkllm_createDefaultParam`, the shared fields from `params`, then `rkllm_init`.
    ///
    /// # Safety
    /// The library must have this layout; the keep-alive must outlive the handle.
    pub(crate) unsafe fn init<S: ResultSink>(
        &self,
        params: &InitParams<'_>,
        handle: &mut sys::LLMHandle,
    ) -> (c_int, KeepAlive) {
        // SAFETY: per the caller.
        unsafe {
            match self {
                Functions::V1_2_0(f) => f.init::<S>(params, handle),
                Functions::V1_2_1(f) => f.init::<S>(params, handle),
                Functions::V1_3_0(f) => f.init::<S>(params, handle),
            }
        }
    }

    /// `rkllm_run` with one prompt; callbacks go to the sink of `init` with `userdata`.
    ///
    /// # Safety
    /// A live handle from `init`; `userdata` is what the sink expects, valid until this returns.
    pub(crate) unsafe fn run(
        &self,
        handle: sys::LLMHandle,
        input: &RunInput<'_>,
        userdata: *mut c_void,
    ) -> c_int {
        // SAFETY: per the caller.
        unsafe {
            match self {
                Functions::V1_2_0(f) => f.run(handle, input, userdata),
                Functions::V1_2_1(f) => f.run(handle, input, userdata),
                Functions::V1_3_0(f) => f.run(handle, input, userdata),
            }
        }
    }

    /// Clears the whole KV cache; `None` when the library lacks `rkllm_clear_kv_cache`.
    ///
    /// # Safety
    /// A live handle.
    pub(crate) unsafe fn clear_kv_cache(
        &self,
        handle: sys::LLMHandle,
        keep_system_prompt: bool,
    ) -> Option<c_int> {
        let keep = c_int::from(keep_system_prompt);
        // SAFETY: per the caller.
        unsafe {
            match self {
                Functions::V1_2_0(f) => f.clear_kv_cache(handle, keep),
                Functions::V1_2_1(f) => f.clear_kv_cache(handle, keep),
                Functions::V1_3_0(f) => f.clear_kv_cache(handle, keep),
            }
        }
    }

    /// What `rkllm_is_running` returns while a run is in progress: 0 in the 1.2.x headers, 1 in
    /// the 1.3.0 header.
    pub(crate) fn running_code(&self) -> c_int {
        match self {
            Functions::V1_2_0(_) | Functions::V1_2_1(_) => 0,
            Functions::V1_3_0(_) => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Symbols = Symbols {
        set_chat_template: false,
        set_function_tools: false,
    };
    const V120: Symbols = Symbols {
        set_chat_template: true,
        set_function_tools: false,
    };
    const LATER: Symbols = Symbols {
        set_chat_template: true,
        set_function_tools: true,
    };

    #[test]
    fn every_release_maps_to_its_layout() {
        let auto = |v: &str, s| choose(AbiSetting::Auto, Some(v), s);
        assert_eq!(auto("1.2.0", V120), Ok(Abi::V1_2_0));
        for v in ["1.2.1", "1.2.2", "1.2.3", "1.2.1b1"] {
            assert_eq!(auto(v, LATER), Ok(Abi::V1_2_1), "{v}");
        }
        assert_eq!(auto("1.3.0", LATER), Ok(Abi::V1_3_0));
        // Every listed release is reachable, and every layout has a release.
        for (v, abi) in RELEASES {
            assert_eq!(release_layout(v), Some(abi));
        }
        for abi in Abi::ALL {
            assert!(RELEASES.iter().any(|(_, a)| *a == abi), "{abi}");
        }
    }

    #[test]
    fn older_and_unknown_releases_are_refused() {
        let auto = |v: &str, s| choose(AbiSetting::Auto, Some(v), s);
        for v in ["1.1.4", "1.0.1", "0.9.0"] {
            assert_eq!(auto(v, NONE), Err(Refusal::TooOld(Some(v.into()))), "{v}");
        }
        for v in ["1.2.4", "1.3.1", "1.4.0", "2.0.0"] {
            assert_eq!(auto(v, LATER), Err(Refusal::Unknown(v.into())), "{v}");
        }
    }

    #[test]
    fn symbols_decide_without_a_version_and_must_agree_with_one() {
        assert_eq!(choose(AbiSetting::Auto, None, V120), Ok(Abi::V1_2_0));
        assert_eq!(
            choose(AbiSetting::Auto, None, LATER),
            Err(Refusal::Ambiguous)
        );
        assert_eq!(
            choose(AbiSetting::Auto, None, NONE),
            Err(Refusal::TooOld(None))
        );
        assert_eq!(
            choose(AbiSetting::Auto, Some("1.2.0"), LATER),
            Err(Refusal::Conflict {
                version: "1.2.0".into(),
                abi: Abi::V1_2_0
            })
        );
        assert_eq!(
            choose(AbiSetting::Auto, Some("1.3.0"), V120),
            Err(Refusal::Conflict {
                version: "1.3.0".into(),
                abi: Abi::V1_3_0
            })
        );
    }

    #[test]
    fn the_setting_overrides_the_version_and_1_2_splits_by_symbols() {
        assert_eq!(
            choose(AbiSetting::V1_3, Some("1.4.0"), LATER),
            Ok(Abi::V1_3_0)
        );
        assert_eq!(choose(AbiSetting::V1_2, None, V120), Ok(Abi::V1_2_0));
        assert_eq!(
            choose(AbiSetting::V1_2, Some("1.3.0"), LATER),
            Ok(Abi::V1_2_1)
        );
    }

    #[test]
    fn refusals_name_the_version_and_what_to_install() {
        let path = std::path::Path::new("/usr/lib/librkllmrt.so");
        for (refusal, version) in [
            (Refusal::TooOld(Some("1.1.4".into())), "1.1.4"),
            (Refusal::Unknown("1.4.0".into()), "1.4.0"),
            (
                Refusal::Conflict {
                    version: "1.2.0".into(),
                    abi: Abi::V1_2_0,
                },
                "1.2.0",
            ),
        ] {
            let m = refusal.message(path);
            assert!(
                m.contains(version) && m.contains("/usr/lib/librkllmrt.so"),
                "{m}"
            );
            assert!(m.contains("release 1.3.0") && m.contains("rknn-llm"), "{m}");
        }
        assert!(Refusal::Ambiguous.message(path).contains("model.rkllm_abi"));
    }

    #[test]
    fn versions_parse_with_suffixes() {
        assert_eq!(parse_version("1.2.1b1"), Some((1, 2, 1)));
        assert_eq!(parse_version("1.3.0"), Some((1, 3, 0)));
        assert_eq!(parse_version("1.3"), None);
        assert_eq!(parse_version("x.y.z"), None);
    }
}
