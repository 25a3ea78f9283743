//! Wave ↔ thread id, both ways; register maps shared by the waves
//! that have the same registers.
//!
//! The sessions look waves up by thread id once per thread per packet
//! (`jThreadsInfo` does it for every register of every wave); a scan of
//! the wave map made that quadratic in the wave count (10,000 waves: about
//! 5 × 10⁸ map steps per `jThreadsInfo`). Both directions are kept in step
//! here, the only writer of either. The maps hash (the ids are small
//! integers: `gpu_target::idhash`): ordered maps made every lookup of a
//! `jThreadsInfo` of 10,000 waves a walk of four levels of nodes, and the
//! reply grew faster than the wave count. The tid order a listing needs is
//! made by a sort, once per change of the waves.

use std::rc::Rc;

use gpu_target::idhash::IdMap;
use gpu_target::model::RegisterDesc;
use gpu_target::model::WaveId;

use crate::target::RegisterInfo;
use crate::target::Tid;

/// The live waves' thread ids (one per wave, never reused) and the reverse.
#[derive(Default)]
pub(super) struct WaveTids {
    by_wave: IdMap<WaveId, Tid>,
    by_tid: IdMap<Tid, WaveId>,
    /// Thread names of live waves (fixed for a wave's life), kept so that
    /// a thread list does not ask the library about every wave each time.
    names: IdMap<WaveId, String>,
    /// `by_tid` as a slice in tid order, made on the first listing after a change: a
    /// thread list of 10,000 unchanged waves copies it instead of walking
    /// the map.
    listing: Option<Rc<[(WaveId, Tid)]>>,
    /// The thread ids of `listing`, made on the first thread list after a
    /// change (a thread list copies it once).
    tids: Option<Rc<[Tid]>>,
}

impl WaveTids {
    pub(super) fn get(&self, wave: &WaveId) -> Option<&Tid> {
        self.by_wave.get(wave)
    }

    pub(super) fn insert(&mut self, wave: WaveId, tid: Tid) {
        self.listing = None;
        self.tids = None;
        if let Some(old) = self.by_wave.insert(wave, tid) {
            self.by_tid.remove(&old);
        }
        self.by_tid.insert(tid, wave);
    }

    pub(super) fn remove(&mut self, wave: &WaveId) {
        if let Some(t) = self.by_wave.remove(wave) {
            self.by_tid.remove(&t);
            self.listing = None;
            self.tids = None;
        }
        self.names.remove(wave);
    }

    pub(super) fn clear(&mut self) {
        self.listing = None;
        self.tids = None;
        self.by_wave.clear();
        self.by_tid.clear();
        self.names.clear();
    }

    /// The kept thread name of a live wave.
    pub(super) fn name(&self, wave: &WaveId) -> Option<&String> {
        self.names.get(wave)
    }

    /// Keep the thread name of a live wave (ignored for unknown waves).
    pub(super) fn set_name(&mut self, wave: WaveId, name: String) {
        if self.by_wave.contains_key(&wave) {
            self.names.insert(wave, name);
        }
    }

    /// Keep the waves `keep` accepts.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&WaveId) -> bool) {
        let by_tid = &mut self.by_tid;
        let names = &mut self.names;
        let listing = &mut self.listing;
        let tids = &mut self.tids;
        self.by_wave.retain(|w, t| {
            let k = keep(w);
            if !k {
                by_tid.remove(t);
                names.remove(w);
                *listing = None;
                *tids = None;
            }
            k
        });
    }

    /// The wave of a thread id.
    pub(super) fn wave_of(&self, tid: Tid) -> Option<WaveId> {
        self.by_tid.get(&tid).copied()
    }

    /// (wave, tid) pairs in thread-id order, kept until the waves change.
    pub(super) fn listing(&mut self) -> Rc<[(WaveId, Tid)]> {
        let by_tid = &self.by_tid;
        self.listing
            .get_or_insert_with(|| {
                let mut v: Vec<(WaveId, Tid)> = by_tid.iter().map(|(t, w)| (*w, *t)).collect();
                v.sort_unstable_by_key(|&(_, t)| t);
                v.into()
            })
            .clone()
    }

    /// The thread ids in thread-id order, kept until the waves change.
    pub(super) fn tids(&mut self) -> Rc<[Tid]> {
        if let Some(t) = &self.tids {
            return t.clone();
        }
        let t: Rc<[Tid]> = self.listing().iter().map(|&(_, t)| t).collect();
        self.tids = Some(t.clone());
        t
    }

    pub(super) fn len(&self) -> usize {
        self.by_wave.len()
    }
}

/// Most distinct register lists whose maps are kept (one per kernel
/// register allocation in practice); past it all are dropped and rebuilt.
const MAX_REG_MAPS: usize = 64;

/// Register maps (architecture register number → the wave's own register
/// index) by the wave's register list. Building one matches every
/// architecture register against the wave's list by name; the waves of a
/// kernel have the same list, so each map is built once per list, not once
/// per wave (with 10,000 waves the per-wave matching was most of a
/// `jThreadsInfo`).
#[derive(Default)]
pub(super) struct RegMaps {
    maps: std::collections::HashMap<Vec<String>, Rc<Vec<Option<usize>>>>,
    /// The same maps by the backend's register-list key, where it has one
    /// (then the wave's register list is not even fetched).
    keyed: std::collections::HashMap<u64, Rc<Vec<Option<usize>>>>,
}

impl RegMaps {
    /// The map of the register list with backend key `key`, if built.
    pub(super) fn by_key(&self, key: u64) -> Option<Rc<Vec<Option<usize>>>> {
        self.keyed.get(&key).cloned()
    }

    /// Remember `map` as the map of backend key `key`.
    pub(super) fn remember(&mut self, key: u64, map: Rc<Vec<Option<usize>>>) {
        if self.keyed.len() >= MAX_REG_MAPS {
            self.keyed.clear();
        }
        self.keyed.insert(key, map);
    }

    /// The map of a wave whose register list is `descs`.
    pub(super) fn map_for(
        &mut self,
        arch: &[RegisterInfo],
        descs: &[RegisterDesc],
    ) -> Rc<Vec<Option<usize>>> {
        let names: Vec<String> = descs.iter().map(|d| d.name.clone()).collect();
        if let Some(m) = self.maps.get(&names) {
            return m.clone();
        }
        let index: std::collections::HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .rev()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let len = arch
            .iter()
            .map(|r| r.regnum as usize + 1)
            .max()
            .unwrap_or(0);
        let mut map = vec![None; len];
        for r in arch {
            if let Some(slot) = map.get_mut(r.regnum as usize) {
                *slot = index.get(r.name.as_str()).copied();
            }
        }
        if self.maps.len() >= MAX_REG_MAPS {
            self.maps.clear();
        }
        let map = Rc::new(map);
        self.maps.insert(names, map.clone());
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_stay_in_step() {
        let mut m = WaveTids::default();
        for i in 0..10u64 {
            m.insert(WaveId(100 + i), 1 + i);
        }
        m.set_name(WaveId(104), "w".into());
        m.set_name(WaveId(200), "gone".into());
        assert_eq!(m.name(&WaveId(200)), None);
        let all: Vec<_> = m.listing().iter().map(|(_, t)| *t).collect();
        assert_eq!(all, (1..=10).collect::<Vec<_>>());
        m.remove(&WaveId(103));
        m.retain(|w| w.0 % 2 == 0);
        assert_eq!(m.len(), 5);
        assert_eq!(m.wave_of(4), None);
        assert_eq!(m.wave_of(5), Some(WaveId(104)));
        assert_eq!(m.wave_of(2), None);
        assert_eq!(m.name(&WaveId(104)).map(String::as_str), Some("w"));
        let v: Vec<_> = m.listing().iter().map(|(_, t)| *t).collect();
        assert_eq!(v, vec![1, 3, 5, 7, 9]);
        assert_eq!(&*m.tids(), &[1, 3, 5, 7, 9]);
        m.insert(WaveId(300), 11);
        assert_eq!(m.listing().last(), Some(&(WaveId(300), 11)));
        assert_eq!(m.tids().last(), Some(&11));
        m.clear();
        assert_eq!(m.wave_of(1), None);
        assert!(m.listing().is_empty());
    }
}
