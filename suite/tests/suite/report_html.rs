//! The HTML report as a laptop shows it: a real report of every profile,
//! rendered by headless Chromium at 1440×900, measured from the DOM. The
//! verdict and the summary must be on the first screen, the page no wider
//! than the window, no listing scrolled sideways, the legend colours kept on
//! the hot path and a view missing a tool drawn grey, not red.
//!
//! Needs a browser (Debian's `chromium`, or the one `$CHROMIUM` names);
//! without it the test is skipped with the install line, and fails when
//! `ALLOCASM_REQUIRE` names `chromium`. Skipped under Miri.

use std::path::Path;
use std::process::Command;

use allocasm_suite::tools::{Tool, need};
use serde_json::Value;

/// The laptop screen the page must fit.
const WIDTH: i64 = 1440;
const HEIGHT: i64 = 900;

/// Measures the page in three states, as JSON in `<pre id="measured">`:
/// before the page's own script runs (as with scripts off: every probe and
/// profile shown), after it (two profiles side by side), and with every
/// profile chosen.
const MEASURE: &str = r#"
<script>
(function () {
  function px(v) { return Math.round(v * 10) / 10; }
  function state() {
    var top = function (sel) {
      var e = document.querySelector(sel);
      return e ? px(e.getBoundingClientRect().top + window.scrollY) : null;
    };
    var right = function (sel) {
      var e = document.querySelector(sel);
      return e ? px(e.getBoundingClientRect().right) : null;
    };
    var listings = document.querySelectorAll('pre.listing');
    var overflowing = [], shown = 0;
    listings.forEach(function (e) {
      if (e.clientWidth === 0) return;
      shown++;
      if (e.scrollWidth > e.clientWidth) {
        var col = e.closest('[data-profile]'), sec = e.closest('[data-probe]');
        overflowing.push((sec ? sec.getAttribute('data-probe') : '?') + ' @ ' +
          (col ? col.getAttribute('data-profile') : '?') + ': ' + e.scrollWidth + ' > ' + e.clientWidth);
      }
    });
    return {
      viewport: [window.innerWidth, window.innerHeight],
      page_width: document.documentElement.scrollWidth,
      page_height: document.documentElement.scrollHeight,
      verdict_top: top('#verdict'),
      toc_top: top('#toc'),
      summary_top: top('#summary-table'),
      summary_right: right('#summary-table'),
      listings: listings.length,
      listings_shown: shown,
      overflowing: overflowing
    };
  }
  function colour(sel, prop) {
    var e = document.querySelector(sel);
    return e ? getComputedStyle(e)[prop] : null;
  }
  var out = { scripts_off: state() };
  var legend = {
    rmw: colour('p.legend .atomic-rmw', 'backgroundColor'),
    call: colour('p.legend .call', 'backgroundColor'),
    hot_rmw: colour('pre.listing .hot.atomic-rmw', 'backgroundColor'),
    hot_call: colour('pre.listing .hot.call', 'backgroundColor'),
    fail: null,
    missing_tool: null
  };
  var probe = document.createElement('p');
  probe.className = 'fail status';
  document.body.appendChild(probe);
  legend.fail = getComputedStyle(probe).color;
  probe.remove();
  document.querySelectorAll('.status').forEach(function (e) {
    if (legend.missing_tool === null && e.textContent.indexOf('missing tool') >= 0)
      legend.missing_tool = getComputedStyle(e).color;
  });
  out.colours = legend;
  window.allocasmMeasured = { out: out, state: state };
})();
</script>
"#;

/// After the page's own script: the two states it makes, written out.
const MEASURE_AFTER: &str = r#"
<script>
(function () {
  var m = window.allocasmMeasured;
  m.out.two_profiles = m.state();
  var all = document.querySelector('button[data-set=all]');
  if (all) { all.click(); m.out.all_profiles = m.state(); }
  var pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(m.out);
  document.body.appendChild(pre);
})();
</script>
"#;

/// Renders `html` in headless Chromium at 1440×900 and returns the
/// measurements [`MEASURE`] took.
fn measure(chromium: &Path, html: &str, dir: &Path) -> Value {
    // Before the page's own script, so the first state is the page with
    // scripts off.
    let at = html
        .rfind("<script>")
        .or_else(|| html.rfind("</body>"))
        .expect("the page has a body");
    let page = dir.join("measured.html");
    let end = html.rfind("</body>").expect("the page has a body");
    std::fs::write(
        &page,
        format!(
            "{}{MEASURE}{}{MEASURE_AFTER}{}",
            &html[..at],
            &html[at..end],
            &html[end..]
        ),
    )
    .unwrap();
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-dev-shm-usage",
            &format!("--window-size={WIDTH},{HEIGHT}"),
            &format!("--user-data-dir={}", dir.join("chromium-profile").display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&o.stdout);
    let Some(start) = dom.find("<pre id=\"measured\">") else {
        panic!(
            "chromium wrote no measurements (exit {:?}):\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let json = &dom[start + "<pre id=\"measured\">".len()..];
    let json = &json[..json.find("</pre>").expect("the end of the measurements")];
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

/// Every profile in `targets/`, comma-separated.
fn every_profile() -> String {
    let dir = allocasm_suite::codegen::manifest_dir().join("targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".toml")?;
            (stem != "suite").then(|| stem.to_string())
        })
        .collect();
    names.sort();
    names.join(",")
}

#[test]
#[cfg_attr(miri, ignore)]
fn html_report_fits_a_laptop_screen_in_headless_chromium() {
    // Headless Chromium or Chrome: `$CHROMIUM`, one on PATH, or where
    // GitHub's macOS and Windows images keep Chrome (tools.rs).
    let Some(chromium) = need(
        "html_report_fits_a_laptop_screen_in_headless_chromium",
        &Tool::Browser,
    ) else {
        return;
    };
    let chromium = chromium.program;
    let dir = allocasm_suite::codegen::manifest_dir()
        .join("target")
        .join("tmp")
        .join(format!("report-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_allocasm"))
        .args(["report", "--out"])
        .arg(&dir)
        .args([
            "-p",
            &every_profile(),
            "--format",
            "html",
            "--no-executed",
            "--no-install",
            "--quiet",
        ])
        .env_remove("RUSTFLAGS")
        .env("NO_COLOR", "1")
        .output()
        .expect("run the allocasm binary");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let m = measure(&chromium, &html, &dir);
    eprintln!("{m:#}");

    let mut problems = Vec::new();
    for state in ["scripts_off", "two_profiles", "all_profiles"] {
        let s = &m[state];
        assert!(s.is_object(), "no measurements with {state}: {m}");
        // Headless Chromium's window of 1440×900 has a viewport as wide
        // and less tall; the page's layout depends on its width only, so
        // the first screen is the first 900 px of the page.
        assert_eq!(
            s["viewport"][0].as_i64(),
            Some(WIDTH),
            "the window is not {WIDTH} px wide: {}",
            s["viewport"]
        );
        for (what, key) in [("verdict", "verdict_top"), ("summary", "summary_top")] {
            match s[key].as_f64() {
                Some(top) if top < HEIGHT as f64 => {}
                top => problems.push(format!(
                    "{state}: the {what} starts at y={top:?}, below the first {HEIGHT} px"
                )),
            }
        }
        let width = s["page_width"].as_i64().unwrap();
        if width > WIDTH {
            problems.push(format!(
                "{state}: the page is {width} px wide, over {WIDTH}"
            ));
        }
        if s["summary_right"].as_f64().is_none_or(|r| r > WIDTH as f64) {
            problems.push(format!(
                "{state}: the summary ends at x={}, past {WIDTH}",
                s["summary_right"]
            ));
        }
        assert!(
            s["listings_shown"].as_i64().unwrap() > 0,
            "{state}: no listing shown"
        );
        for o in s["overflowing"].as_array().unwrap() {
            problems.push(format!("{state}: listing scrolls sideways: {o}"));
        }
    }
    // Scripts on, two profiles are shown by default, all on request.
    let shown = |state: &str| m[state]["listings_shown"].as_i64().unwrap();
    assert!(
        shown("two_profiles") < shown("all_profiles")
            && shown("all_profiles") == shown("scripts_off"),
        "profiles chosen: {} listings with two, {} with all, {} with scripts off",
        shown("two_profiles"),
        shown("all_profiles"),
        shown("scripts_off")
    );
    let c = &m["colours"];
    if !c["hot_rmw"].is_null() && c["hot_rmw"] != c["rmw"] {
        problems.push(format!(
            "an atomic RMW on the hot path is {} , not its legend colour {}",
            c["hot_rmw"], c["rmw"]
        ));
    }
    if !c["hot_call"].is_null() && c["hot_call"] != c["call"] {
        problems.push(format!(
            "a call on the hot path is {}, not its legend colour {}",
            c["hot_call"], c["call"]
        ));
    }
    assert!(
        !c["hot_rmw"].is_null() || !c["hot_call"].is_null(),
        "no atomic or call on any hot path: {c}"
    );
    if !c["missing_tool"].is_null() && c["missing_tool"] == c["fail"] {
        problems.push(format!(
            "\"not built: missing tool\" is drawn {} like a failure",
            c["missing_tool"]
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let _ = std::fs::remove_dir_all(dir);
}
