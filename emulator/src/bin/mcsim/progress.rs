//! Progress bars (indicatif) for the simulator's progress callbacks.

/// A progress bar on stderr, drawn only on a terminal, fed by the
/// simulator's progress callback; cleared when dropped.
pub(crate) struct Bar {
    unit: &'static str,
    on: bool,
    bar: Option<indicatif::ProgressBar>,
}

impl Bar {
    pub(crate) fn new(unit: &'static str) -> Bar {
        use std::io::IsTerminal;
        Bar {
            unit,
            on: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    pub(crate) fn update(&mut self, p: mcast_emulator::sim::progress::Progress) {
        if !self.on {
            return;
        }
        let unit = self.unit;
        let b = self.bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(p.total);
            b.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {unit} {{msg}}"
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        b.set_position(p.done);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
